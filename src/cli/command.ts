/** What a command is: the shape main() parses flags for and runs. Imports nothing from the commands. */
import type { ParseArgsConfig } from 'node:util';

export interface Io {
  out(s: string): void;
  err(s: string): void;
  env: NodeJS.ProcessEnv;
  /** How the program was called (process.argv[1]): `kubectl-renumber` makes texts say `kubectl renumber`. */
  program?: string;
  /** Is stdout / stderr a terminal (colour, live progress lines)? Absent: no. */
  stdoutTTY?: boolean;
  stderrTTY?: boolean;
}

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /** Command flags (the global ones are added). */
  options: Options;
  /** Extra help text after the flags. */
  help?: string;
  /** -o formats the command takes besides table, wide, json and yaml (its help's -o line lists them). */
  outputs?: readonly string[];
  /**
   * The positional arguments the command takes (default: none). main() refuses fewer than `min` (when set) and
   * more than `max` with exit 2 before the command runs; `name` names one of them in the message (e.g. "CIDR").
   * With `insteadFlag` given (e.g. --fleet), the command takes no positional at all.
   */
  positionals?: { min?: number; max: number; name: string; insteadFlag?: string };
  run(args: { values: Values; positionals: string[]; io: Io }): Promise<number>;
}
