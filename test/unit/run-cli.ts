import { appendFileSync } from 'node:fs';
import { main, type Io } from '../../src/cli/main.ts';

/**
 * Run the CLI in-process with its own stdout/stderr buffers and an environment without a home kubeconfig.
 * With KUBE_RENUMBER_TEST_TRACE=FILE in the test's environment, each command line, its progress (stderr, as it is
 * written, each line stamped with the time) and its exit code are appended to FILE: where a test's time went.
 */
export async function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const trace = process.env.KUBE_RENUMBER_TEST_TRACE;
  const note = trace ? (s: string) => appendFileSync(trace, s.split('\n').filter(Boolean).map((l) => `${new Date().toISOString()} ${l}\n`).join('')) : undefined;
  note?.(`$ kube-renumber ${argv.join(' ')}`);
  const io: Io = { out: (s) => { out += s; }, err: (s) => { err += s; note?.(s); }, env: { HOME: '/nonexistent', ...env } };
  const code = await main(argv, io);
  note?.(`exit ${code}`);
  return { code, out, err };
}
