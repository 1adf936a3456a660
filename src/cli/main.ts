import { parseArgs, type ParseArgsConfig } from 'node:util';
import { NetError } from '../net/index.ts';
import { applyCommand, restoreCommand, resumeCommand, rollbackCommand, statusCommand, verifyCommand } from './commands/apply.ts';
import { calcCommand } from './commands/calc.ts';
import { inspectCommand } from './commands/inspect.ts';
import { planCommand } from './commands/plan.ts';
import { probeCommand } from './commands/probe.ts';
import { suggestCommand } from './commands/suggest.ts';
import { EXIT_CODE_OF_KIND, ExitCode, UsageError, UserError } from './errors.ts';
import { VERSION } from './version.ts';

export interface Io {
  out(s: string): void;
  err(s: string): void;
  env: NodeJS.ProcessEnv;
}

type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /** Command flags (the global ones are added). */
  options: Options;
  /** Extra help text after the flags. */
  help?: string;
  run(args: { values: Values; positionals: string[]; io: Io }): Promise<number>;
}

/** Flags every command takes, as kubectl spells them. */
export const GLOBAL_OPTIONS: Options = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  output: { type: 'string', short: 'o' },
  'from-file': { type: 'string', multiple: true, short: 'f' },
  avoid: { type: 'string', multiple: true },
  config: { type: 'string' },
  'request-timeout': { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  help: { type: 'boolean', short: 'h' },
};

const GLOBAL_HELP = `Global flags:
  --kubeconfig PATH        kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)
  --context NAME           kubeconfig context to use
  -n, --namespace NS       limit namespaced work to NS
  -f, --from-file PATH     read the cluster from kubectl get -o yaml|json dumps, kOps or kubeadm config
                           instead of a live cluster (repeatable; a directory reads every *.yaml/*.yml/*.json)
  --avoid CIDR[=REASON]    a range to keep clear of (repeatable)
  --config PATH            config file (default: KUBE_RENUMBER_CONFIG, then ~/.config/kube-renumber/config.yaml)
  -o, --output FORMAT      table | wide | json | yaml
  --request-timeout DUR    per-request timeout for the API server, e.g. 30s (default 30s)
  -v, --verbose            progress on stderr, and a stack trace with any error
  -h, --help               help`;

const COMMANDS: Command[] = [
  inspectCommand, calcCommand, suggestCommand, planCommand,
  applyCommand, resumeCommand, statusCommand, verifyCommand, rollbackCommand, restoreCommand, probeCommand,
];

function topHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `kube-renumber ${VERSION}: move a live Kubernetes cluster's Service CIDR and Pod CIDR to new ranges.

Usage: kube-renumber COMMAND [flags]      (also: kubectl renumber COMMAND [flags])

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}   ${c.summary}`).join('\n')}
  ${'version'.padEnd(width)}   print the version

Run "kube-renumber COMMAND --help" for a command's flags.

Exit codes: 0 ok; 1 findings; 2 bad usage or input value; 3 unreadable input file; 4 cluster unreachable;
5 permission denied; 6 verification failed; 7 stopped at a gate; 8 locked by another run; 70 internal error.
`;
}

function commandHelp(c: Command): string {
  const own = Object.keys(c.options).length > 0 ? '' : '';
  return `${c.summary}\n\nUsage: ${c.usage}\n${c.help ? `\n${c.help}\n` : ''}${own}\n${GLOBAL_HELP}\n`;
}

export function defaultIo(): Io {
  return {
    out: (s) => { process.stdout.write(s); },
    err: (s) => { process.stderr.write(s); },
    env: process.env,
  };
}

/** Run the CLI; returns the exit code. Never throws. */
export async function main(argv: string[], io: Io = defaultIo()): Promise<number> {
  const verbose = argv.includes('-v') || argv.includes('--verbose');
  try {
    const [name, ...rest] = argv;
    if (!name || name === 'help' || name === '--help' || name === '-h') {
      io.out(topHelp());
      return name ? ExitCode.ok : ExitCode.usage;
    }
    if (name === 'version' || name === '--version') {
      io.out(`${VERSION}\n`);
      return ExitCode.ok;
    }
    const cmd = COMMANDS.find((c) => c.name === name);
    if (!cmd) throw new UsageError(`unknown command "${name}" (commands: ${COMMANDS.map((c) => c.name).join(', ')}, version)`);
    let parsed;
    try {
      parsed = parseArgs({ args: rest, options: { ...GLOBAL_OPTIONS, ...cmd.options }, allowPositionals: true, strict: true });
    } catch (e) {
      throw new UsageError(`${(e as Error).message.split('\n')[0]} (see "kube-renumber ${cmd.name} --help")`);
    }
    if (parsed.values.help) {
      io.out(commandHelp(cmd));
      return ExitCode.ok;
    }
    return await cmd.run({ values: parsed.values as Values, positionals: parsed.positionals, io });
  } catch (e) {
    return reportError(e, io, verbose);
  }
}

export function exitCodeOf(e: unknown): number {
  if (e instanceof UserError) return EXIT_CODE_OF_KIND[e.kind];
  if (e instanceof NetError) return ExitCode.usage;
  return ExitCode.internal;
}

function reportError(e: unknown, io: Io, verbose: boolean): number {
  const code = exitCodeOf(e);
  const message = e instanceof Error ? e.message.split('\n')[0] : String(e);
  if (code === ExitCode.internal) {
    io.err(`error: internal: ${message}${verbose ? '' : ' (run with -v for details)'}\n`);
  } else {
    io.err(`error: ${message}\n`);
  }
  if (verbose && e instanceof Error && e.stack) io.err(`${e.stack}\n`);
  return code;
}
