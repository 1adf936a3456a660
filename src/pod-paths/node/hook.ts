/**
 * The node hook: the operator's command that re-registers one node (spec.podCIDR.node.hook), run through /bin/sh
 * with KUBE_RENUMBER_NODE and the run's hook environment (src/engine/pod-steps.ts hookEnvironment: PATH, HOME and
 * KUBECONFIG only).
 */
import { spawn } from 'node:child_process';
import { hookEnvironment } from '../../engine/pod-steps.ts';

/** Runs the node hook with `env` (hookEnvironment) and KUBE_RENUMBER_NODE; its output goes to our stderr log. */
export function runHook(command: string, node: string, timeoutMs: number, log: (m: string) => void,
  env: Readonly<Record<string, string>> = hookEnvironment(process.env)): Promise<void> {
  return new Promise((resolve, reject) => {
    // its own process group, so a timeout kills whatever the hook started too
    const child = spawn('/bin/sh', ['-c', command], { env: { ...env, KUBE_RENUMBER_NODE: node }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    const keep = (b: Buffer) => { out = (out + b.toString()).slice(-4000); };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { child.kill('SIGKILL'); } }, timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); reject(new Error(`node hook could not start: ${e.message}`)); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (out.trim()) log(`node hook (${node}): ${out.trim().split('\n').slice(-5).join(' | ')}`);
      if (code === 0) resolve();
      else reject(new Error(`node hook for ${node} ${signal ? `was killed (${signal}, timeout ${Math.round(timeoutMs / 1000)} s)` : `exited ${code}`}: ${out.trim().split('\n').pop() ?? ''}`));
    });
  });
}
