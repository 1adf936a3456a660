/**
 * The verb check before a run's first write (apply, resume, rollback, restore): every permission the plan's run
 * needs (plan/access.ts) is asked of the API server with a SelfSubjectAccessReview, and a missing one stops the
 * run, named with the file of deploy/ that grants it, before the Lease is taken or anything is written (exit 5).
 */
import { deniedAccess } from '../../kube/access-review.ts';
import { connect, type KubeClient } from '../../kube/client.ts';
import { accessNeeds, needKey } from '../../plan/access.ts';
import type { MigrationPlan } from '../../plan/index.ts';
import { durationFlag, str } from '../common.ts';
import type { Io, Values } from '../command.ts';
import { UserError } from '../errors.ts';

/** A client for the kubeconfig and context of the command's flags. */
export function clientFor(values: Values, io: Io): KubeClient {
  return connect({
    kubeconfig: str(values, 'kubeconfig'), context: str(values, 'context'),
    requestTimeoutMs: durationFlag(values, 'request-timeout'), env: io.env,
  });
}

export async function checkAccess(values: Values, io: Io, plan: MigrationPlan): Promise<void> {
  const needs = accessNeeds(plan);
  const denied = await deniedAccess(clientFor(values, io), needs);
  if (denied === undefined) {
    io.err('warning: the API server does not answer access reviews (SelfSubjectAccessReview): permissions are not checked before the run\n');
    return;
  }
  if (values.verbose === true) io.err(`permissions: ${needs.length} verb(s) checked with SelfSubjectAccessReview, ${denied.length} missing\n`);
  if (denied.length === 0) return;
  const files = [...new Set(denied.map((d) => d.file))].join(', ');
  throw new UserError(`not allowed: ${denied.map((d) => `${needKey(d)} (${d.why})`).join('; ')}; grant the permissions in ${files} (nothing was changed)`, 'forbidden');
}
