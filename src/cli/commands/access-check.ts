/**
 * The verb check before a run's first write (apply, resume, rollback, restore): every permission the plan's run
 * needs (plan/access.ts) is asked of the API server with a SelfSubjectAccessReview, and a missing one stops the
 * run, named with the file of deploy/ that grants it, before the Lease is taken or anything is written (exit 5).
 */
import { deniedAccess, whoAmI } from '../../kube/access-review.ts';
import { connect, type KubeClient } from '../../kube/client.ts';
import { accessNeeds, needKey, recreateGrantText, type AccessNeed } from '../../plan/access.ts';
import type { MigrationPlan } from '../../plan/index.ts';
import { connectOptions } from '../common.ts';
import type { Io, Values } from '../command.ts';
import { UserError } from '../errors.ts';

/** A client for the kubeconfig and context of the command's flags. */
export function clientFor(values: Values, io: Io): KubeClient {
  return connect(connectOptions(values, io));
}

export async function checkAccess(values: Values, io: Io, plan: MigrationPlan): Promise<void> {
  const needs = accessNeeds(plan, { readKubeletConfig: values['read-kubelet-config'] === true });
  const client = clientFor(values, io);
  const denied = await deniedAccess(client, needs);
  if (denied === undefined) {
    io.err('warning: the API server does not answer access reviews (SelfSubjectAccessReview): permissions are not checked before the run\n');
    return;
  }
  if (values.verbose === true) io.err(`permissions: ${needs.length} verb(s) checked with SelfSubjectAccessReview, ${denied.length} missing\n`);
  if (denied.length === 0) return;
  // create pods is granted per namespace (the plan's bare pods): the commands that grant exactly the missing ones
  const podCreate = (d: AccessNeed) => d.verb === 'create' && d.resource === 'pods' && !d.subresource;
  const recreate = denied.filter((d) => podCreate(d) && d.namespace !== undefined);
  // a plan written before spec.podCIDR.barePodNamespaces asks create pods cluster-wide, which deploy/ no longer grants
  const legacy = denied.filter((d) => podCreate(d) && d.namespace === undefined);
  const rest = denied.filter((d) => !podCreate(d));
  const files = [...new Set(rest.map((d) => d.file))].join(', ');
  const how = [
    ...(rest.length > 0 ? [`grant the permissions in ${files}`] : []),
    ...(legacy.length > 0 ? ['the plan does not list its bare pods\' namespaces (spec.podCIDR.barePodNamespaces, written by newer versions): plan again, then grant create pods where it says (kube-renumber rbac PLAN)'] : []),
    ...(recreate.length > 0 ? [recreateGrantText(recreate.map((d) => d.namespace!))] : []),
  ];
  const who = await whoAmI(client);
  throw new UserError(`not allowed${who !== undefined ? ` for user "${who}"` : ''}: ${denied.map((d) => `${needKey(d)} (${d.why})`).join('; ')}; ${how.join('; ')} (nothing was changed)`, 'forbidden');
}
