/**
 * Cilium on the bundled examples (examples/cilium-cluster-pool, examples/cilium-multi-pool; their sources in each
 * SOURCES.md): what inspect reads, the cluster-pool refusal with its sourced reason, and the multi-pool path's
 * plan: its section, its steps in order, the cilium-config changes, the refusals, and the plan read back.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { dump, load } from 'js-yaml';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { Snapshot } from '../../src/cluster/types.ts';
import { buildMigrationPlan, type MigrationPlan } from '../../src/plan/plan.ts';
import { planFromYaml, planToYaml } from '../../src/plan/render.ts';
import { run } from './run-cli.ts';

install();

const ROOT = new URL('../../', import.meta.url).pathname;
const CP = `${ROOT}examples/cilium-cluster-pool`;
const MP = `${ROOT}examples/cilium-multi-pool`;

async function snap(dir: string): Promise<Snapshot> {
  return buildSnapshot(await readInventoryFiles([dir]));
}

function planOf(s: Snapshot, target: string): MigrationPlan {
  return buildMigrationPlan(s, { pod: { target } });
}

const failed = (p: MigrationPlan) => p.preflight.filter((c) => c.status === 'fail').map((c) => `${c.id}: ${c.message}`);

/** A copy of the multi-pool example with cilium-config's data changed by `edit` (and without the files `drop`). */
function variant(edit: (data: Record<string, string>) => void, drop: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'kr-cilium-'));
  for (const f of readdirSync(MP)) if (!drop.includes(f) && f !== 'configmaps.yaml') copyFileSync(join(MP, f), join(dir, f));
  const cms = load(readFileSync(join(MP, 'configmaps.yaml'), 'utf8')) as { items: Array<{ metadata: { name: string }; data: Record<string, string> }> };
  edit(cms.items.find((c) => c.metadata.name === 'cilium-config')!.data);
  writeFileSync(join(dir, 'configmaps.yaml'), dump(cms));
  return dir;
}

describe('Cilium cluster-pool example', () => {
  it('inspect reads cluster-pool: the owner and the pool range from cilium-config', async () => {
    const s = await snap(CP);
    assert.deepEqual(s.warnings, []);
    assert.equal(s.cni.plugin, 'cilium');
    assert.equal(s.cni.ipamMode, 'cluster-pool');
    assert.equal(s.cni.owner?.kind, 'cilium-cluster-pool');
    assert.ok(s.ranges.some((r) => r.role === 'pod' && r.cidr === '10.42.0.0/16' && /cluster-pool-ipv4-cidr/.test(r.source)));
    assert.equal(s.cilium?.config['cluster-pool-ipv4-cidr'], '10.42.0.0/16');
    const r = await run(['inspect', '-f', CP]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /pod addresses from\s+Cilium cluster-pool IPAM/);
  });

  it('plan --pod-cidr refuses with the sourced reason and points to multi-pool (exit 2, nothing planned)', async () => {
    const r = await run(['plan', '-f', CP, '--pod-cidr', '10.60.0.0/16', '-o', 'yaml']);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.out, '');
    assert.match(r.err, /^error: moving the Pod CIDR is refused: Cilium cluster-pool IPAM/);
    assert.match(r.err, /clusterPoolIPv4PodCIDRList/);
    assert.match(r.err, /https:\/\/docs\.cilium\.io\/en\/stable\/network\/concepts\/ipam\/cluster-pool\//);
    assert.match(r.err, /--ipam cilium-multi-pool/);
    const forced = await run(['plan', '-f', CP, '--pod-cidr', '10.60.0.0/16', '--ipam', 'cilium-multi-pool']);
    assert.equal(forced.code, 2, 'the owner refuses whatever --ipam says');
  });
});

describe('Cilium multi-pool path: plan', () => {
  it('inspect reads the pool and names the path', async () => {
    const s = await snap(MP);
    assert.deepEqual(s.warnings, []);
    assert.equal(s.cni.owner?.kind, 'cilium-multi-pool');
    assert.deepEqual(s.cilium?.pools, [{ name: 'default', apiVersion: 'cilium.io/v2alpha1', ipv4: { cidrs: ['10.42.0.0/16'], maskSize: 24 } }]);
    assert.ok(s.ranges.some((r) => r.role === 'pool' && r.cidr === '10.42.0.0/16' && r.source === 'CiliumPodIPPool/default'));
  });

  it('plans the new pool, the cilium-config changes around the restarts, and the steps in order', async () => {
    const p = planOf(await snap(MP), '10.60.0.0/16');
    assert.deepEqual(failed(p), []);
    const pc = p.spec.podCIDR!;
    assert.equal(pc.ipam, 'cilium-multi-pool');
    assert.deepEqual(pc.from, ['10.42.0.0/16']);
    const cm = pc['cilium-multi-pool']!;
    assert.equal(cm.apiVersion, 'cilium.io/v2alpha1');
    assert.deepEqual(cm.oldPool, { name: 'default', ipv4: { cidrs: ['10.42.0.0/16'], maskSize: 24 } });
    assert.deepEqual(cm.newPool, { name: 'kube-renumber-10-60-0-0-16', ipv4: { cidrs: ['10.60.0.0/16'], maskSize: 24 } });
    assert.deepEqual(cm.config.move, [
      { key: 'ipam-default-ip-pool', to: 'kube-renumber-10-60-0-0-16' },
      { key: 'auto-create-cilium-pod-ip-pools', from: 'default=ipv4-cidrs:10.42.0.0/16;ipv4-mask-size:24', to: 'kube-renumber-10-60-0-0-16=ipv4-cidrs:10.60.0.0/16;ipv4-mask-size:24' },
      { key: 'ipv4-native-routing-cidr', from: '10.42.0.0/16', to: '10.32.0.0/11' },
    ]);
    assert.deepEqual(cm.config.final, [{ key: 'ipv4-native-routing-cidr', from: '10.32.0.0/11', to: '10.60.0.0/16' }]);
    const ids = p.steps.map((s) => s.id);
    assert.deepEqual(ids, [
      'confirm-pod-disruption', 'create-ciliumpodippool', 'cilium-config-move', 'scale-critical', 'restart-pods', 'restore-scale',
      'delete-ciliumpodippool', 'cilium-config-final', 'pod-cidr-config', 'verify-pods',
    ]);
    const gate = p.steps.find((s) => s.id === 'pod-cidr-config');
    assert.equal(gate?.kind === 'gate' ? gate.gate.condition : undefined, 'cilium-pod-cidr-config');
    // the YAML reads back as written, and validates
    const yaml = planToYaml(p);
    assert.deepEqual(planFromYaml(yaml).spec.podCIDR, JSON.parse(JSON.stringify(pc)));
  });

  it('the CLI writes a plan (exit 0 or 1 for warnings) that reads back valid', async () => {
    const r = await run(['plan', '-f', MP, '--pod-cidr', '10.60.0.0/16', '-o', 'yaml']);
    assert.ok(r.code === 0 || r.code === 1, r.err);
    assert.match(r.out, /ipam: cilium-multi-pool/);
    const doc = planFromYaml(r.out);
    assert.equal(doc.spec.podCIDR?.ipam, 'cilium-multi-pool');
  });

  it('refuses a NEW whose one range must also hold the old range and the services (native routing)', async () => {
    const p = planOf(await snap(MP), '10.100.0.0/16');
    const f = failed(p);
    assert.ok(f.some((x) => /^pod-cilium-config: cilium-config ipv4-native-routing-cidr 10\.42\.0\.0\/16 does not hold 10\.100\.0\.0\/16.*10\.0\.0\.0\/9.*service/i.test(x)), f.join('\n'));
  });

  it('refuses without CiliumPodIPPools in the input, with the fix', async () => {
    const p = planOf(await snap(variant(() => {}, ['ciliumpodippools.yaml'])), '10.60.0.0/16');
    assert.ok(failed(p).some((x) => /^pod-old-pools: no CiliumPodIPPool in the input/.test(x)), failed(p).join('\n'));
    assert.equal(p.spec.podCIDR, undefined);
  });

  it('refuses when the default pool named by ipam-default-ip-pool is not there', async () => {
    const p = planOf(await snap(variant((d) => { d['ipam-default-ip-pool'] = 'blue'; })), '10.60.0.0/16');
    assert.ok(failed(p).some((x) => /^pod-old-pools: the default pool blue \(cilium-config ipam-default-ip-pool\) is not among/.test(x)), failed(p).join('\n'));
  });

  it('refuses a NEW without the pool\'s family, or with one it has not', async () => {
    const p = planOf(await snap(MP), '10.60.0.0/16,fd00:60::/48');
    assert.ok(failed(p).some((x) => /^pod-old-pools: the default pool default has IPv4 CIDRs, NEW .* has IPv6/.test(x)), failed(p).join('\n'));
  });

  it('refuses an auto-create list naming other pools too, and rewrites a pre-allocation map', async () => {
    const two = planOf(await snap(variant((d) => { d['auto-create-cilium-pod-ip-pools'] = 'default=ipv4-cidrs:10.42.0.0/16;ipv4-mask-size:24,blue=ipv4-cidrs:10.43.0.0/16;ipv4-mask-size:24'; })), '10.60.0.0/16');
    assert.ok(failed(two).some((x) => /^pod-cilium-config: .*auto-create-cilium-pod-ip-pools .* names pool default among others/.test(x)), failed(two).join('\n'));
    const pre = planOf(await snap(variant((d) => { d['ipam-multi-pool-pre-allocation'] = 'default=8,blue=4'; })), '10.60.0.0/16');
    assert.deepEqual(failed(pre), []);
    assert.deepEqual(pre.spec.podCIDR?.['cilium-multi-pool']?.config.move.find((c) => c.key === 'ipam-multi-pool-pre-allocation'),
      { key: 'ipam-multi-pool-pre-allocation', from: 'default=8,blue=4', to: 'kube-renumber-10-60-0-0-16=8,blue=4' });
  });

  it('a plan whose new pool lies outside spec.podCIDR.to is refused when read back, naming the field', async () => {
    const p = planOf(await snap(MP), '10.60.0.0/16');
    const bad = planToYaml(p).replace(/(newPool:\n\s+name: \S+\n\s+ipv4:\n\s+cidrs:\n\s+- )10\.60\.0\.0\/16/, '$110.61.0.0/16');
    assert.notEqual(bad, planToYaml(p), 'the YAML was changed');
    assert.throws(() => planFromYaml(bad), /spec\.podCIDR\.cilium-multi-pool\.newPool\.ipv4\.cidrs\[0\]: 10\.61\.0\.0\/16 is not inside spec\.podCIDR\.to/);
  });
});
