import { main, type Io } from '../../src/cli/main.ts';

/** Run the CLI in-process with its own stdout/stderr buffers and an environment without a home kubeconfig. */
export async function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = { out: (s) => { out += s; }, err: (s) => { err += s; }, env: { HOME: '/nonexistent', ...env } };
  const code = await main(argv, io);
  return { code, out, err };
}
