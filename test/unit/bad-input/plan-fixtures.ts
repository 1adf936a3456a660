/**
 * Plans for the apply/resume/status/verify/rollback/restore corpora: written once by the real planner from
 * the bundled examples, then changed per case; a kubeconfig for a 127.0.0.1 port nothing listens on, so a case
 * that reached the cluster would end with 4, not the 2 or 3 it expects.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';
import * as yaml from 'js-yaml';
import { planId } from '../../../src/cli/commands/apply.ts';
import { run } from '../run-cli.ts';
import { ROOT } from './harness.ts';

async function planText(args: string[], example: string): Promise<string> {
  const r = await run(['plan', ...args, '-f', join(ROOT, 'examples', example), '-o', 'yaml']);
  if (r.code !== 0 && r.code !== 1) throw new Error(`plan ${args.join(' ')} -f ${example}: exit ${r.code}: ${r.err}`);
  return r.out;
}

/*
 * kOps (examples/kops-tailscale: services 100.64.0.0/13, pods 100.96.0.0/11, nonMasqueradeCIDR 100.64.0.0/10, VPC
 * 172.20.0.0/16) refuses a plan moving one range where no nonMasqueradeCIDR of /8 or smaller holds it and the unmoved
 * range: single-range plans here stay next to the other range (nonMasqueradeCIDR 100.0.0.0/9), clear of 100.64.0.0/10.
 */
/** Service CIDR plan (kOps, Tailscale collision): passes its pre-flight checks, has gates and a move-kubernetes step. */
export const SERVICE_PLAN = await planText(['--service-cidr', '100.32.0.0/16'], 'kops-tailscale');
/** Pod CIDR plan, Calico IPAM. */
export const CALICO_PLAN = await planText(['--pod-cidr', '100.0.0.0/11'], 'kops-tailscale');
/** Pod CIDR plan, node IPAM (drain-node, reregister gates). */
export const NODE_PLAN = await planText(['--pod-cidr', '100.0.0.0/11', '--ipam', 'node'], 'kops-tailscale');
/** A plan whose pre-flight checks failed (kubeadm cluster without the ServiceCIDR API). */
export const FAILED_PLAN = await planText(['--service-cidr', '172.24.0.0/16'], 'kubeadm-exhausted');

/** The plan as data. */
export function parsePlan(text: string): Record<string, unknown> {
  return yaml.load(text) as Record<string, unknown>;
}

/** `text` parsed, changed by `fn`, dumped again. */
export function mutate(text: string, fn: (d: any) => void): string {
  const d = yaml.load(text) as any;
  fn(d);
  return yaml.dump(d, { lineWidth: -1 });
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export const TOKEN = 'kr-corpus-token-8c1f0a';
export const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: https://127.0.0.1:${await freePort()}
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: ${TOKEN}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: u}
current-context: nowhere
`;

/** The default state directory of a plan in a case whose HOME is $D/home. */
export function defaultStateDirOf(text: string): string {
  return `$D/home/.local/state/kube-renumber/${planId(text)}`;
}

/** Flags every case passes: the unreachable cluster and a state directory inside the case directory. */
export const LIVE = ['--kubeconfig', '$D/kubeconfig', '--state-dir', '$D/state'];

/** `status` reads the journal (the cluster only when there is none): its cases go without --kubeconfig. */
export function withoutKubeconfigForStatus(cases: { args: string[] }[]): void {
  for (const c of cases) {
    const i = c.args.indexOf('--kubeconfig');
    if (c.args[0] === 'status' && i >= 0) c.args.splice(i, 2);
  }
}
