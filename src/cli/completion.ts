/**
 * Shell completion: `completion bash|zsh|fish` prints a script that asks the program itself (`__complete WORDS`),
 * and kubectl (>= 1.26) asks `kubectl_complete-renumber WORDS` the same way for the plugin. The answer follows
 * cobra's protocol, which kubectl's plugin completion expects: one candidate per line, then `:DIRECTIVE`
 * (0: the shell may also complete file names; 4: it must not).
 */
import { SEVERITIES } from '../analyze/catalog.ts';
import { POD_PATH_NAMES } from '../plan/pod-paths/registry.ts';
import type { Command, Options } from './command.ts';
import { STRATEGIES, TIER_ORDERS } from './commands/plan.ts';
import { FAMILIES, SUGGEST_FOR } from './commands/suggest.ts';
import { OUTPUT_FORMATS } from './output.ts';
import { DRY_RUNS, EVENT_FORMATS } from './session.ts';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;

const NO_FILES = 4;
const FILES = 0;

/**
 * Values of the flags that take one of a few words: the lists their parsers accept, and the pod paths installed
 * (src/install.ts), read when asked.
 */
export function flagValues(): Readonly<Record<string, readonly string[]>> {
  return {
    output: OUTPUT_FORMATS,
    for: SUGGEST_FOR,
    'fail-on': SEVERITIES,
    strategy: STRATEGIES,
    'tier-order': Object.keys(TIER_ORDERS),
    ipam: POD_PATH_NAMES,
    'dry-run': DRY_RUNS,
    family: FAMILIES,
    events: EVENT_FORMATS,
  };
}
/** Flags whose value is a path: the shell completes file names. */
const PATH_FLAGS = new Set(['kubeconfig', 'from-file', 'config', 'state-dir', 'targets']);

function answer(candidates: readonly string[], prefix: string, directive: number): string {
  return [...candidates.filter((c) => c.startsWith(prefix)), `:${directive}`].join('\n') + '\n';
}

/**
 * The completions of the last word of `words` (the words after the program name; the last is the one being
 * typed, possibly empty).
 */
export function completeWords(words: readonly string[], commands: readonly Command[], globals: Options,
  takesGlobal: (c: Command, flag: string) => boolean): string {
  const cur = words.at(-1) ?? '';
  const before = words.slice(0, -1);
  const names = [...commands.map((c) => c.name), 'help'];
  if (before.length === 0) return answer(names, cur, NO_FILES);
  const cmd = commands.find((c) => c.name === before[0]);
  if (before[0] === 'help') return answer(before.length === 1 ? commands.map((c) => c.name) : [], cur, NO_FILES);
  if (!cmd) return answer([], cur, NO_FILES);
  if (cmd.name === 'completion') return answer(before.length === 1 ? SHELLS : [], cur, NO_FILES);
  const options: Options = { ...Object.fromEntries(Object.entries(globals).filter(([k]) => takesGlobal(cmd, k))), ...cmd.options };
  const long = (k: string) => `--${k}`;
  const valueOf = (flag: string): string[] | 'files' | undefined => {
    if (PATH_FLAGS.has(flag)) return 'files';
    const values = flagValues();
    if (flag === 'output') return [...values.output!, ...(cmd.outputs ?? [])];
    const v = values[flag];
    return v ? [...v] : undefined;
  };
  // --flag=VAL being typed
  const eq = cur.match(/^--([^=]+)=(.*)$/);
  if (eq) {
    const v = valueOf(eq[1]!);
    if (v === 'files') return answer([], '', FILES);
    return answer((v ?? []).map((x) => `--${eq[1]}=${x}`), cur, NO_FILES);
  }
  // the value of the flag before
  const prev = before.at(-1)!;
  const prevFlag = prev.startsWith('--') ? prev.slice(2) : /^-[A-Za-z]$/.test(prev) ? Object.entries(options).find(([, o]) => o.short === prev[1])?.[0] : undefined;
  if (prevFlag && options[prevFlag]?.type === 'string') {
    const v = valueOf(prevFlag);
    if (v === 'files') return answer([], '', FILES);
    return answer(v ?? [], cur, NO_FILES);
  }
  if (cur.startsWith('-')) return answer(Object.keys(options).map(long).sort(), cur, NO_FILES);
  // a positional: a plan file for the commands that run one
  return answer([], cur, cmd.positionals?.name === 'PLAN' ? FILES : NO_FILES);
}

/** The completion script for `shell`, completing `prog` (kube-renumber or kubectl-renumber). */
export function completionScript(shell: (typeof SHELLS)[number], prog: string): string {
  const fn = `__${prog.replace(/[^A-Za-z0-9]/g, '_')}_complete`;
  const bash = `${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" out directive line
  out=$("\${COMP_WORDS[0]}" __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  directive="\${out##*:}"
  COMPREPLY=()
  while IFS='' read -r line; do
    case "$line" in :*|'') ;; *) COMPREPLY+=("$line") ;; esac
  done <<< "$out"
  if [ \${#COMPREPLY[@]} -eq 0 ] && [ $(( directive & 4 )) -eq 0 ]; then
    while IFS='' read -r line; do COMPREPLY+=("$line"); done < <(compgen -f -- "$cur")
  fi
}
complete -F ${fn} ${prog}
`;
  switch (shell) {
    case 'bash':
      return `# ${prog} completion for bash: source <(${prog} completion bash)\n${bash}`;
    case 'zsh':
      return `#compdef ${prog}\n# ${prog} completion for zsh: source <(${prog} completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash}`;
    case 'fish':
      return `# ${prog} completion for fish: ${prog} completion fish | source
function ${fn}
    set -l words (commandline -opc) (commandline -ct)
    set -l out (command $words[1] __complete $words[2..-1] 2>/dev/null)
    set -l directive (string replace -r '^:' '' -- $out[-1])
    for line in $out[1..-2]
        echo $line
    end
    if test (count $out) -le 1; and test (math "$directive % 8 - $directive % 4") -eq 0
        __fish_complete_path (commandline -ct)
    end
end
complete -c ${prog} -f -a '(${fn})'
`;
  }
}
