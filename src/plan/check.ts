/** A pre-flight check: what every planner module reports, kept apart so any of them can name it. */
export type CheckStatus = 'pass' | 'warn' | 'fail';

export interface PreflightCheck {
  id: string;
  status: CheckStatus;
  message: string;
  /** What to do about it ('' when nothing). */
  fix: string;
  /** True for checks that judge the requested target itself: a failure refuses the target. */
  target?: boolean;
}
