import { errorLine } from '../errors.ts';
import { install } from '../install.ts';
import { existsSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { parseArgs } from 'node:util';
import { brand, didYouMean, normalizeArgs, parseArgsError, programName, suggestions } from './args.ts';
import { completeWords, completionScript, SHELLS } from './completion.ts';
import type { Command, Io, Options, Values } from './command.ts';
import { isDnsLabel } from '../plan/targets.ts';
import { NetError } from '../net/index.ts';
import { applyCommand, restoreCommand, resumeCommand, rollbackCommand, statusCommand, verifyCommand } from './commands/apply.ts';
import { calcCommand } from './commands/calc.ts';
import { inspectCommand } from './commands/inspect.ts';
import { planCommand } from './commands/plan.ts';
import { probeCommand } from './commands/probe.ts';
import { rbacCommand } from './commands/rbac.ts';
import { suggestCommand } from './commands/suggest.ts';
import { EXIT_CODE_OF_KIND, ExitCode, UsageError, UserError } from './errors.ts';
import { redact } from '../kube/redact.ts';
import { CONNECTION_FLAGS, connectionOverrides, durationFlag, list, str, verbosity } from './common.ts';
import { checkOverrides } from '../kube/client.ts';
import { colorFor, parseOutput, renderData, setTableStyle } from './output.ts';
import { parseAvoid } from './config.ts';
import { VERSION } from './version.ts';

export type { Command, Io, Options, Values } from './command.ts';

/** Flags every command takes, as kubectl spells them. */
export const GLOBAL_OPTIONS: Options = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  cluster: { type: 'string' },
  user: { type: 'string' },
  server: { type: 'string', short: 's' },
  token: { type: 'string' },
  'certificate-authority': { type: 'string' },
  'insecure-skip-tls-verify': { type: 'boolean' },
  as: { type: 'string' },
  'as-group': { type: 'string', multiple: true },
  'as-uid': { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  output: { type: 'string', short: 'o' },
  'from-file': { type: 'string', multiple: true, short: 'f' },
  avoid: { type: 'string', multiple: true },
  config: { type: 'string' },
  'request-timeout': { type: 'string' },
  'no-headers': { type: 'boolean' },
  verbose: { type: 'boolean', short: 'v' },
  // kubectl's log level: -v=6, -v 6, --v=6 (normalizeArgs); -v alone is --verbose
  v: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

/** Help lines of the global flags, by flag name (a command's help leaves out those it does not take). */
const GLOBAL_HELP: ReadonlyArray<readonly [string, string]> = [
  ['kubeconfig', '  --kubeconfig PATH        kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'],
  ['context', '  --context NAME           kubeconfig context to use'],
  ['cluster', '  --cluster NAME           kubeconfig cluster to use instead of the context\'s'],
  ['user', '  --user NAME              kubeconfig user to use instead of the context\'s'],
  ['server', '  -s, --server URL         API server address instead of the cluster\'s (kubectl\'s -s; no kubeconfig needed)'],
  ['token', '  --token TOKEN            bearer token instead of the user\'s credentials (a client certificate stays)'],
  ['certificate-authority', '  --certificate-authority PATH  CA file to trust the API server with, instead of the cluster\'s'],
  ['insecure-skip-tls-verify', '  --insecure-skip-tls-verify  do not check the API server\'s certificate (insecure)'],
  ['as', '  --as USER                user to act as (impersonation: the Impersonate-User header, like kubectl)'],
  ['as-group', '  --as-group GROUP         group to act as (repeatable; needs --as)'],
  ['as-uid', '  --as-uid UID             uid to act as (needs --as)'],
  ['namespace', '  -n, --namespace NS       limit namespaced work to NS'],
  ['from-file', `  -f, --from-file PATH     read the cluster from kubectl get -o yaml|json dumps, kOps or kubeadm config
                           instead of a live cluster (repeatable; a directory reads every *.yaml/*.yml/*.json);
                           with --kubeconfig, --context, --cluster or --server: a kOps Cluster spec or kubeadm
                           ClusterConfiguration added to the live read`],
  ['avoid', '  --avoid CIDR[=REASON]    a range to keep clear of (repeatable)'],
  ['config', '  --config PATH            config file (default: KUBE_RENUMBER_CONFIG, then ~/.config/kube-renumber/config.yaml)'],
  ['output', '  -o, --output FORMAT      table | wide | json | yaml (also -o=json, --output=json)'],
  ['no-headers', '  --no-headers             table output without the column headers (-o table or wide)'],
  ['request-timeout', `  --request-timeout DUR    per-request timeout for the API server, a Go duration such as 30s or 1m30s;
                           0 waits as long as the server takes, like kubectl (default 30s)`],
  ['verbose', '  -v, --verbose            progress on stderr, and a stack trace with any error'],
  ['v', `  -v=N, --v=N              log level 0-10 as kubectl's: 1 and above as -v; 6 and above also one line per
                           API request on stderr (verb, URL, status, milliseconds; never headers or tokens)`],
  ['help', '  -h, --help               help'],
];

const versionCommand: Command = {
  name: 'version',
  summary: 'print the version (-o json|yaml: a document with the Node.js version and platform too)',
  usage: 'kube-renumber version [-o json|yaml]',
  options: {},
  async run({ values, io }) {
    const output = parseOutput(str(values, 'output'));
    if (values.output !== undefined && output !== 'json' && output !== 'yaml') {
      throw new UsageError(`version -o ${output}: version prints json or yaml (without -o: the version alone)`);
    }
    if (output === 'json' || output === 'yaml') {
      io.out(renderData({ version: VERSION, nodeVersion: process.version, platform: `${platform()}/${arch()}` }, output));
    } else {
      io.out(`${VERSION}\n`);
    }
    return ExitCode.ok;
  },
};

const completionCommand: Command = {
  name: 'completion',
  summary: 'print a shell completion script: completion bash|zsh|fish',
  usage: 'kube-renumber completion bash|zsh|fish',
  positionals: { min: 1, max: 1, name: 'SHELL' },
  options: {},
  help: `Load it in the current shell, e.g. source <(kube-renumber completion bash), or in fish
kube-renumber completion fish | source. As the kubectl plugin (kubectl >= 1.26), completion comes from the
kubectl_complete-renumber program installed next to kubectl-renumber: nothing to load.`,
  async run({ positionals, io }) {
    const shell = positionals[0]!;
    if (!(SHELLS as readonly string[]).includes(shell)) throw new UsageError(`completion ${shell}: unknown shell (use ${SHELLS.join(', ')})`);
    io.out(completionScript(shell as (typeof SHELLS)[number], programName(io) === 'kubectl renumber' ? 'kubectl-renumber' : 'kube-renumber'));
    return ExitCode.ok;
  },
};

export const COMMANDS: Command[] = [
  inspectCommand, calcCommand, suggestCommand, planCommand,
  applyCommand, resumeCommand, statusCommand, verifyCommand, rollbackCommand, restoreCommand, probeCommand, rbacCommand,
  versionCommand, completionCommand,
];

function topHelp(plugin = false): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `kube-renumber ${VERSION}: move a live Kubernetes cluster's Service CIDR and Pod CIDR to new ranges.

Usage: kube-renumber COMMAND [flags]${plugin ? '' : '      (also: kubectl renumber COMMAND [flags])'}

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}   ${c.summary}`).join('\n')}
  ${'help'.padEnd(width)}   help COMMAND: a command's flags

Run "kube-renumber COMMAND --help" (or "kube-renumber help COMMAND") for a command's flags.

Exit codes: 0 ok; 1 findings; 2 bad command line (flag, argument, CIDR, value, unknown --context);
3 bad input file (dump, plan, journal, --config, the kubeconfig named by --kubeconfig or KUBECONFIG);
4 no kubeconfig anywhere or cluster unreachable; 5 permission denied (401/403); 6 verification failed;
7 stopped at a gate; 8 locked by another run; 70 internal error.
`;
}

function commandHelp(c: Command): string {
  const globals = GLOBAL_HELP.filter(([flag]) => takesGlobal(c, flag))
    .map(([flag, line]) => (flag === 'output' && c.outputs ? line.replace('| yaml', `| yaml | ${c.outputs.join(' | ')}`) : line))
    .join('\n');
  return `${c.summary}\n\nUsage: ${c.usage}\n${c.help ? `\n${c.help}\n` : ''}\nGlobal flags:\n${globals}\n`;
}

/**
 * stdout and stderr as the process has them. A reader that goes away (`status | head`) ends that stream's output,
 * not the command: an `apply` whose events went into a pipe that closed runs on to its end, and a command that
 * only prints exits as it would have (EPIPE is not an internal error).
 */
let stdio: Io | undefined;
export function defaultIo(): Io {
  if (stdio) return stdio;
  const closed = { out: false, err: false };
  const watch = (stream: NodeJS.WriteStream, which: 'out' | 'err') => stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    closed[which] = true;
  });
  watch(process.stdout, 'out');
  watch(process.stderr, 'err');
  return stdio = {
    out: (s) => { if (!closed.out) process.stdout.write(s); },
    err: (s) => { if (!closed.err) process.stderr.write(s); },
    env: process.env,
    program: process.argv[1],
    stdoutTTY: process.stdout.isTTY === true,
    stderrTTY: process.stderr.isTTY === true,
  };
}


/** Run the CLI; returns the exit code. Never throws. */
export async function main(argv: string[], io: Io = defaultIo()): Promise<number> {
  install();
  const verbose = isVerbose(argv);
  const prog = programName(io);
  // Last line of defence: no credential reaches stderr, whoever wrote the line; and every "kube-renumber COMMAND"
  // in it named as the user called the program.
  const rawIo = io;
  io = { ...rawIo, err: (s) => rawIo.err(brand(redact(s), prog)) };
  const help = (text: string) => io.out(brand(text, prog));
  try {
    const [name, ...rest] = argv;
    if (name === '__complete') {
      io.out(completeWords(rest, COMMANDS, GLOBAL_OPTIONS, (c, f) => takesGlobal(c, f)));
      return ExitCode.ok;
    }
    if (!name || name === '--help' || name === '-h') {
      help(topHelp(prog !== 'kube-renumber'));
      return name ? ExitCode.ok : ExitCode.usage;
    }
    if (name === 'help') {
      if (rest.length === 0) { help(topHelp(prog !== 'kube-renumber')); return ExitCode.ok; }
      const about = COMMANDS.find((c) => c.name === rest[0]);
      if (!about || rest.length > 1) {
        if (rest.length > 1) throw new UsageError(`help takes one command, got ${rest.length} words (usage: ${prog} help COMMAND)`);
        throw unknownCommand(rest[0]!);
      }
      help(commandHelp(about));
      return ExitCode.ok;
    }
    if (name === '--version') {
      io.out(`${VERSION}\n`);
      return ExitCode.ok;
    }
    const cmd = COMMANDS.find((c) => c.name === name);
    if (!cmd) throw unknownCommand(name);
    checkRenamed(cmd, rest);
    const options = { ...GLOBAL_OPTIONS, ...cmd.options };
    let parsed;
    try {
      parsed = parseArgs({ args: normalizeArgs(rest, options), options, allowPositionals: true, strict: true });
    } catch (e) {
      throw parseArgsError(e, cmd.name, options, (f) => f in cmd.options || takesGlobal(cmd, f), prog);
    }
    if (parsed.values.help) {
      help(commandHelp(cmd));
      return ExitCode.ok;
    }
    const values = parsed.values as Values;
    checkUnusedGlobals(cmd, values);
    checkValues(cmd, values);
    // -v=1 and above: what -v alone shows (progress, stack traces), for every reader of values.verbose
    if (verbosity(values) >= 1) values.verbose = true;
    checkPositionals(cmd, parsed.positionals, values);
    const output = str(values, 'output') ?? 'table';
    if (values['no-headers'] === true && output !== 'table' && output !== 'wide') {
      throw new UsageError(`--no-headers applies to table output, not -o ${output} (leave out one of them)`);
    }
    setTableStyle({ noHeaders: values['no-headers'] === true, color: colorFor(io, io.stdoutTTY) && (output === 'table' || output === 'wide') });
    try {
      return await cmd.run({ values, positionals: parsed.positionals, io });
    } finally {
      setTableStyle({ noHeaders: false, color: false });
    }
  } catch (e) {
    return reportError(e, io, verbose);
  }
}

function unknownCommand(name: string): UsageError {
  const names = [...COMMANDS.map((c) => c.name), 'help'];
  const hint = didYouMean(suggestions(name, names));
  return new UsageError(`unknown command "${name}"${hint || ` (commands: ${names.join(', ')})`}`);
}

/**
 * Flag spellings that changed meaning, refused with the new one named (one meaning per flag name across commands).
 */
const RENAMED: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  probe: {
    '--keep': 'probe --keep is now --keep-deployment (--keep is plan\'s: a Service whose ClusterIP is kept)',
  },
};

function checkRenamed(cmd: Command, args: readonly string[]): void {
  const end = args.indexOf('--');
  for (const a of end < 0 ? args : args.slice(0, end)) {
    const why = RENAMED[cmd.name]?.[a.split('=')[0]!];
    if (why) throw new UsageError(`${why} (see "kube-renumber ${cmd.name} --help")`);
  }
}

/** `flags` each with the reason `why`. */
function because(flags: readonly string[], why: string): Record<string, string> {
  return Object.fromEntries(flags.map((f) => [f, why]));
}

const NO_CLUSTER = 'it reads no cluster';
/** What the commands that run or check a plan do not take: the plan holds the cluster and the ranges. */
const PLAN_RUNS: Readonly<Record<string, string>> = {
  'from-file': 'the plan holds what was read from the cluster',
  avoid: 'ranges to avoid are chosen when planning',
  config: 'ranges to avoid are chosen when planning',
  namespace: 'the plan decides which objects change',
};
const WHOLE_CLUSTER = 'it reads the whole cluster';
const NOTHING_TO_READ = 'it reads nothing';
/**
 * Global flags a command has no use for, with the reason: given, they stop it with exit 2 rather than be
 * ignored (a user who passes --kubeconfig to status, or -n to plan, expects it to matter), and its help
 * leaves them out.
 */
const UNUSED_GLOBALS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  calc: {
    ...because(CONNECTION_FLAGS, NO_CLUSTER), namespace: NO_CLUSTER, 'from-file': NO_CLUSTER,
    avoid: 'it does address math on the CIDR given', config: 'it does address math on the CIDR given',
  },
  rbac: {
    ...because(CONNECTION_FLAGS, 'it reads the plan, not the cluster'), namespace: 'the plan names the namespaces', 'from-file': 'it reads the plan',
    avoid: 'it reads the plan', config: 'it reads the plan', output: 'it writes the Roles as YAML manifests, always', 'no-headers': 'it prints no table',
  },
  inspect: { namespace: WHOLE_CLUSTER },
  suggest: { namespace: WHOLE_CLUSTER },
  plan: { namespace: WHOLE_CLUSTER },
  // status reads the cluster's copy of the run's state when the state directory holds no journal
  ...Object.fromEntries(['apply', 'resume', 'status', 'verify', 'rollback', 'restore'].map((c) => [c, PLAN_RUNS])),
  probe: { 'from-file': 'it measures a live cluster', avoid: 'it measures a live cluster', config: 'it measures a live cluster' },
  ...Object.fromEntries(['version', 'completion'].map((c) => [c, {
    ...because(CONNECTION_FLAGS, NOTHING_TO_READ), namespace: NOTHING_TO_READ, 'from-file': NOTHING_TO_READ,
    avoid: NOTHING_TO_READ, config: NOTHING_TO_READ,
    'no-headers': 'it prints no table', ...(c === 'completion' ? { output: 'it prints a shell script' } : {}),
  }])),
};

/** Does `cmd` take the global flag `flag`? */
function takesGlobal(cmd: Command, flag: string): boolean {
  return !(flag in (UNUSED_GLOBALS[cmd.name] ?? {}));
}

/** A global flag the command has no use for: exit 2, naming it and why. */
function checkUnusedGlobals(cmd: Command, values: Values): void {
  for (const [flag, why] of Object.entries(UNUSED_GLOBALS[cmd.name] ?? {})) {
    if (values[flag] !== undefined) throw new UsageError(`${cmd.name} does not take --${flag}: ${why} (see "kube-renumber ${cmd.name} --help")`);
  }
}

/** The global flags every command takes, checked before the command runs: empty values, durations, names, CIDRs. */
function checkValues(cmd: Command, values: Values): void {
  for (const [key, v] of Object.entries(values)) {
    for (const one of typeof v === 'string' ? [v] : Array.isArray(v) ? v : []) {
      if (one.trim() === '') throw new UsageError(`--${key} needs a value, got an empty string (see "kube-renumber ${cmd.name} --help")`);
    }
  }
  // 0: no timeout, as kubectl reads it
  durationFlag(values, 'request-timeout');
  verbosity(values);
  checkOverrides(connectionOverrides(values));
  const ns = values.namespace;
  if (typeof ns === 'string' && !isDnsLabel(ns)) {
    throw new UsageError(`--namespace ${JSON.stringify(ns)} is not a valid namespace name (lower-case letters, digits and "-", at most 63, starting and ending alphanumeric)`);
  }
  for (const a of list(values, 'avoid')) parseAvoid(a);
}

function looksLikeCidr(word: string): boolean {
  return /^[0-9a-f:.]+\/\d*$/i.test(word.trim()) && /[.:]/.test(word);
}

/** What the user probably meant by a stray positional word, as " (did you mean …?)", or "". */
export function strayHint(cmd: Command, word: string): string {
  const w = word.trim();
  const q = /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`;
  if (cmd.name === 'suggest' && (w === 'pods' || w === 'services')) return ' (did you mean --for services,pods? it chooses both ranges together)';
  if (cmd.name === 'plan' && looksLikeCidr(w)) return ` (did you mean --service-cidr ${q} or --pod-cidr ${q}?)`;
  if (takesGlobal(cmd, 'avoid') && looksLikeCidr(w)) return ` (did you mean --avoid ${q}?)`;
  if (cmd.name === 'probe' && /^([a-z0-9-]+\/)?[a-z0-9-]+(:\d+)?$/.test(w)) return ` (did you mean --service ${q}?)`;
  if (takesGlobal(cmd, 'from-file') && (existsSync(w) || /[/\\]|\.(ya?ml|json)$/i.test(w))) return ` (did you mean -f ${q}?)`;
  return '';
}

function checkPositionals(cmd: Command, positionals: string[], values: Values): void {
  const spec = cmd.positionals ?? { max: 0, name: 'argument' };
  // e.g. apply --fleet DIR: the flag stands in for the positional
  if (spec.insteadFlag !== undefined && values[spec.insteadFlag] !== undefined) {
    if (positionals.length > 0) throw new UsageError(`--${spec.insteadFlag} takes the place of the ${spec.name}: give one or the other, not both`);
    return;
  }
  const usage = cmd.usage.split('\n')[0];
  if (positionals.length > spec.max) {
    const word = positionals[spec.max]!;
    const takes = spec.max === 0
      ? `${cmd.name} takes no arguments besides flags`
      : `${cmd.name} takes ${spec.min === spec.max ? 'exactly' : 'at most'} ${spec.max === 1 ? `one ${spec.name}` : `${spec.max} ${spec.name}s`}`;
    const hint = strayHint(cmd, word);
    throw new UsageError(`unexpected argument ${JSON.stringify(word)}: ${takes}${hint || ` (usage: ${usage})`}`);
  }
  if (spec.min !== undefined && positionals.length < spec.min) {
    const takes = spec.min === spec.max ? `exactly ${spec.min === 1 ? 'one' : spec.min}` : `at least ${spec.min === 1 ? 'one' : spec.min}`;
    throw new UsageError(`${cmd.name} takes ${takes} ${spec.name}${spec.min === 1 ? '' : 's'}, got ${positionals.length || 'none'} (usage: ${usage})`);
  }
}

/**
 * For the installed binary: an exception or rejection nothing caught (a bug, or a callback of a dependency) ends
 * the process as one "error:" line and its exit code (70 unless it is a user error), never a Node stack trace
 * (except with -v).
 */
export function installCrashHandlers(io: Io = defaultIo(), argv: readonly string[] = process.argv.slice(2)): void {
  const verbose = isVerbose(argv);
  const safeIo: Io = { ...io, err: (s) => io.err(redact(s)) };
  let crashed = false;
  const crash = (e: unknown): void => {
    if (crashed) return;
    crashed = true;
    process.exit(reportError(e, safeIo, verbose));
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
}

/** -v, --verbose or -v=N with N of 1 or more among the flags (not after "--", where words are positionals). */
function isVerbose(argv: readonly string[]): boolean {
  const args = normalizeArgs(argv, GLOBAL_OPTIONS);
  const end = args.indexOf('--');
  const flags = end < 0 ? args : args.slice(0, end);
  return flags.includes('-v') || flags.includes('--verbose') || flags.some((f) => /^--v=0*[1-9]\d*$/.test(f));
}

export function exitCodeOf(e: unknown): number {
  if (e instanceof UserError) return EXIT_CODE_OF_KIND[e.kind];
  if (e instanceof NetError) return ExitCode.usage;
  return ExitCode.internal;
}

function reportError(e: unknown, io: Io, verbose: boolean): number {
  const code = exitCodeOf(e);
  const message = redact(errorLine(e));
  if (code === ExitCode.internal) {
    io.err(`error: internal: ${message}${verbose ? '' : ' (run with -v for details)'}\n`);
  } else {
    io.err(`error: ${message}\n`);
  }
  if (verbose && e instanceof Error && e.stack) io.err(`${redact(e.stack)}\n`);
  return code;
}
