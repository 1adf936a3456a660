// Gate kubelet-cluster-dns read from a real kubelet (--read-kubelet-config): a kubelet built from the same
// k8s.io/kubernetes module as the testbed (test/testbed/kubelet-build.ts), with the CRI stand-in fakecri behind
// it, registers node tb-kubelet-0 with clusterDNS 10.96.0.10. The gate, run as the ServiceAccount the shipped
// roles bind (kube-renumber-migrate), is refused without the opt-in role (get nodes/proxy) and says so; with
// deploy/rbac-kubelet-configz.yaml applied it waits while the kubelet runs with the old clusterDNS, and passes on
// its own once the kubelet was restarted with the new one. kwok serves no configz, so this needs the real one.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connect, type KubeClient } from '../../src/kube/client.ts';
import { kubeletsClusterDNS } from '../../src/kube/kubelet-configz.ts';
import type { StepContext } from '../../src/engine/runner.ts';
import { ServiceExecutor } from '../../src/engine/service-steps.ts';
import type { MigrationPlan } from '../../src/plan/plan.ts';
import { startKubelet, type RealKubelet } from '../testbed/kubelet.ts';
import { useTestbed } from '../testbed/harness.ts';
import { migrateKubeconfig } from '../integration/pod-helpers.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OLD_DNS = '10.96.0.10';
const NEW_DNS = '10.100.0.10';

/** The part of a plan gate kubelet-cluster-dns reads: the DNS Service's old and new IPs. */
const plan = {
  mapping: [{ namespace: 'kube-system', name: 'kube-dns', isDNS: true, isKubernetes: false, action: 'move', from: [OLD_DNS], to: [NEW_DNS] }],
  steps: [],
  spec: {
    serviceCIDR: { from: ['10.96.0.0/16'], to: ['10.100.0.0/16'], target: ['10.100.0.0/16'], apiVersion: 'networking.k8s.io/v1' },
    strategy: 'in-place',
  },
} as unknown as MigrationPlan;

function gateCtx(client: KubeClient, lines: string[]): StepContext {
  return { client, log: (m: string) => lines.push(m), warn: (m: string) => lines.push(`warn: ${m}`) } as unknown as StepContext;
}

describe('gate kubelet-cluster-dns against a real kubelet (configz through the node proxy)', () => {
  const tb = useTestbed({ nodes: 0, realKubelets: true });
  let kubelet: RealKubelet | undefined;
  let migrate: KubeClient;
  const gate = new ServiceExecutor(plan, { readKubeletConfig: true });
  // an inner suite, so the kubelet stops (and its root directory is unmounted) before the testbed's own after hook
  describe('node tb-kubelet-0', () => {
    after(async () => {
      await kubelet?.stop();
    });

    test('a real kubelet registers, is Ready and serves its configuration through the apiserver', async () => {
      kubelet = await startKubelet(tb, { name: 'tb-kubelet-0', clusterDNS: [OLD_DNS] });
      const node = await tb.client.get('/api/v1/nodes/tb-kubelet-0');
      assert.ok((node.status.addresses ?? []).some((a: any) => a.type === 'InternalIP' && a.address === kubelet!.address));
      const cz = await tb.client.get<any>('/api/v1/nodes/tb-kubelet-0/proxy/configz');
      assert.deepEqual(cz.kubeletconfig.clusterDNS, [OLD_DNS]);
    });

    test('as the migrate ServiceAccount without the opt-in role: refused, and the gate says which file grants it', async () => {
      migrate = connect({ kubeconfig: await migrateKubeconfig(tb) });
      const lines: string[] = [];
      assert.equal(await gate.kubeletsOnNewDNS(gateCtx(migrate, lines)), false);
      assert.match(lines.join('\n'), /forbidden.*deploy\/rbac-kubelet-configz\.yaml/);
    });

    test('with deploy/rbac-kubelet-configz.yaml: the gate waits while the kubelet runs with the old clusterDNS', async () => {
      const r = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac-kubelet-configz.yaml')]);
      assert.equal(r.code, 0, r.stderr);
      // RBAC reaches the authorizer's cache within a moment
      let lines: string[] = [];
      for (let i = 0; i < 40; i++) {
        lines = [];
        await gate.kubeletsOnNewDNS(gateCtx(migrate, lines));
        if (!/forbidden/.test(lines.join('\n'))) break;
        await new Promise((res) => setTimeout(res, 250));
      }
      assert.equal(await gate.kubeletsOnNewDNS(gateCtx(migrate, (lines = []))), false);
      assert.match(lines.join('\n'), new RegExp(`tb-kubelet-0 has \\[${OLD_DNS.replaceAll('.', '\\.')}\\]`));
      const report = await kubeletsClusterDNS(migrate, [OLD_DNS], [NEW_DNS]);
      assert.deepEqual({ holds: report.holds, ready: report.ready, behind: report.behind }, { holds: false, ready: 1, behind: [{ node: 'tb-kubelet-0', clusterDNS: [OLD_DNS] }] });
    });

    test('a kubelet naming both the old and the new IP is not there yet (the old one first would be asked first)', async () => {
      await kubelet!.restart({ clusterDNS: [OLD_DNS, NEW_DNS] });
      const lines: string[] = [];
      assert.equal(await gate.kubeletsOnNewDNS(gateCtx(migrate, lines)), false, lines.join('\n'));
    });

    test('after the kubelet is restarted with the new clusterDNS the gate passes on its own', async () => {
      await kubelet!.restart({ clusterDNS: [NEW_DNS] });
      const lines: string[] = [];
      assert.equal(await gate.kubeletsOnNewDNS(gateCtx(migrate, lines)), true, lines.join('\n'));
      assert.match(lines.join('\n'), /all 1 Ready node\(s\) name 10\.100\.0\.10 \(configz\)/);
    });

    test('without --read-kubelet-config the gate still does not read the kubelets (no kubelet-config ConfigMap: it waits for --ack-gate)', async () => {
      const lines: string[] = [];
      assert.equal(await new ServiceExecutor(plan, {}).kubeletsOnNewDNS(gateCtx(migrate, lines)), false);
      assert.match(lines.join('\n'), /--ack-gate kubelet-cluster-dns/);
    });
  });
});
