/**
 * The decisions of a Service move, pure (unit-tested without an apiserver): what the next write of one Service
 * is, when a batch is done, what a view shows wrong, whose helper a Service of a helper's name is, and which
 * Services hold a nodePort the apiserver refuses.
 */
import type { KubeObject } from '../../cluster/types.ts';
import { KubeApiError } from '../../kube/client.ts';
import { coverName, MANAGED_LABEL, nodePortCoverName, type StepItem } from '../../plan/plan.ts';
import { UserError } from '../../errors.ts';
import { firstAndMore } from '../../text.ts';
import { COVER_FOR_LABEL, ownedHelper, RUN_LABEL } from '../covers.ts';
import { BRIDGE_FOR_LABEL, ipsOf, itemKey, sameIPs, type MoveEvidence, type ServiceView } from './common.ts';

/**
 * The nodePorts a 422 of the apiserver refuses as taken ("spec.ports[0].nodePort: Invalid value: 31479: provided
 * port is already allocated"); empty for any other error.
 */
export function takenNodePorts(e: unknown): number[] {
  if (!(e instanceof KubeApiError) || e.status !== 422) return [];
  return [...e.message.matchAll(/nodePort: Invalid value: (\d+): provided port is already allocated/g)].map((m) => Number(m[1]));
}

/** Which Services, other than `self`, hold one of `ports` as a nodePort or healthCheckNodePort: "namespace/name" → ports. */
export function nodePortHolders(services: readonly KubeObject[], ports: readonly number[], self: { namespace: string; name: string }): Map<string, number[]> {
  const want = new Set(ports);
  const out = new Map<string, number[]>();
  for (const s of services) {
    if (s.metadata?.namespace === self.namespace && s.metadata?.name === self.name) continue;
    const held = [...(s.spec?.ports ?? []).map((p: { nodePort?: number }) => p.nodePort), s.spec?.healthCheckNodePort]
      .filter((n): n is number => typeof n === 'number' && want.has(n));
    if (held.length > 0) out.set(`${s.metadata?.namespace}/${s.metadata?.name}`, [...new Set(held)]);
  }
  return out;
}

export type MoveDecision =
  /** at the mapped IPs: only the bridge may be missing */
  | { action: 'ensure-bridge' }
  /** neither at the planned old IPs nor at the mapped ones: someone changed it */
  | { action: 'conflict'; message: string }
  /** gone (an interrupted recreate, or deleted by someone): bridge, then create at the mapped IPs from the backup */
  | { action: 'create' }
  /** recreate: delete (uid precondition), bridge, create at the mapped IPs */
  | { action: 'delete' }
  /** in-place, first hop: ExternalName, bridge, back at the mapped IPs */
  | { action: 'external-name' }
  /** in-place, ExternalName already (an interrupted run): bridge, back at the mapped IPs */
  | { action: 'back' };

/** The next move of one Service given what the cluster shows now. */
export function decideMove(it: StepItem, cur: KubeObject | undefined, strategy: 'in-place' | 'recreate'): MoveDecision {
  if (!cur) return { action: 'create' };
  const external = cur.spec?.type === 'ExternalName';
  if (!external && sameIPs(ipsOf(cur), it.to)) return { action: 'ensure-bridge' };
  if (!external && !sameIPs(ipsOf(cur), it.from)) {
    return { action: 'conflict', message: `Service ${it.namespace}/${it.name} has ClusterIPs ${ipsOf(cur).join(',') || 'none'}, neither the planned ${it.from.join(',')} nor ${it.to.join(',')}: changed since the plan; re-plan` };
  }
  if (strategy === 'recreate') return { action: 'delete' };
  return { action: external ? 'back' : 'external-name' };
}

/** Moved: at the mapped IPs, not ExternalName, its bridge (if any) at the old IPs. */
export function itemDone(view: ServiceView, it: StepItem): boolean {
  const s = view.get(itemKey(it));
  if (!s || s.spec?.type === 'ExternalName' || !sameIPs(ipsOf(s), it.to)) return false;
  if (!it.bridge) return true;
  const b = view.get(`${it.namespace}/${it.bridge}`);
  return !!b && sameIPs(ipsOf(b), it.from);
}

/** The covers of these items in a view (ours by label and name; of run `run` when given). */
export function coversIn(view: ServiceView, items: readonly StepItem[], run?: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const it of items) {
    const c = view.get(`${it.namespace}/${coverName(it.name)}`);
    if (c && ownedHelper(c, COVER_FOR_LABEL, it.name, run)) out.push(c);
  }
  return out;
}

/** The node-port covers (plan --nodeport-cover) of these items in a view (ours by label and name; of run `run` when given). */
export function nodePortCoversIn(view: ServiceView, items: readonly StepItem[], run?: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const it of items) {
    const c = view.get(`${it.namespace}/${nodePortCoverName(it.name)}`);
    if (c && ownedHelper(c, COVER_FOR_LABEL, it.name, run)) out.push(c);
  }
  return out;
}

/**
 * Objects in the view named like a helper of these items (`<svc>-kr-old` bridge, `<svc>-kr-cover` cover, `<svc>-kr-npcover` node-port cover) that are
 * not helpers of this run: someone else's Service, which a move must neither patch nor delete. Pure.
 */
export function squatters(view: ServiceView, items: readonly StepItem[], run?: string): string[] {
  const out: string[] = [];
  for (const it of items) {
    const c = view.get(`${it.namespace}/${coverName(it.name)}`);
    if (c && !ownedHelper(c, COVER_FOR_LABEL, it.name, run)) out.push(`${it.namespace}/${coverName(it.name)}`);
    const n = view.get(`${it.namespace}/${nodePortCoverName(it.name)}`);
    if (n && !ownedHelper(n, COVER_FOR_LABEL, it.name, run)) out.push(`${it.namespace}/${nodePortCoverName(it.name)}`);
    const b = it.bridge ? view.get(`${it.namespace}/${it.bridge}`) : undefined;
    if (b && !ownedHelper(b, BRIDGE_FOR_LABEL, it.name, run)) out.push(`${it.namespace}/${it.bridge}`);
  }
  return out;
}

/**
 * The error that stops a run at an object that has a helper's name but is not this run's (exit 6). `found` gives
 * the objects as seen: one that carries kube-renumber's helper labels but no run label (a bridge or cover made by a
 * version before run labels) is named with the command that labels it, if the operator knows it is this run's.
 */
export function notOursError(what: readonly string[], run?: string, found: (key: string) => KubeObject | undefined = () => undefined): UserError {
  const unlabelled = run === undefined ? [] : what.filter((k) => {
    const l = found(k)?.metadata?.labels ?? {};
    return l[MANAGED_LABEL] === 'true' && (l[BRIDGE_FOR_LABEL] !== undefined || l[COVER_FOR_LABEL] !== undefined) && l[RUN_LABEL] === undefined;
  });
  const label = unlabelled.length === 0 ? '' : `; ${unlabelled.join(', ')} carr${unlabelled.length === 1 ? 'ies' : 'y'} the helper labels but no ${RUN_LABEL} label `
    + '(made by a kube-renumber without run labels): only if this run made them, label them by hand and resume: '
    + unlabelled.map((k) => { const [ns, name] = k.split('/'); return `kubectl -n ${ns} label service ${name} ${RUN_LABEL}=${run}`; }).join('; ');
  // a helper of another plan's run (the plan was made again, so its id changed): that run's to finish or undo
  const others = run === undefined ? [] : what.flatMap((k) => {
    const l = found(k)?.metadata?.labels ?? {};
    const other = l[RUN_LABEL];
    return l[MANAGED_LABEL] === 'true' && (l[BRIDGE_FOR_LABEL] !== undefined || l[COVER_FOR_LABEL] !== undefined) && other !== undefined && other !== run
      ? [`${k} is a helper of the run of plan ${other}: finish or roll back that plan's run (kube-renumber rollback PLAN of id ${other}), `
        + `or, if that plan was replaced by this one, label it as this run's (kubectl -n ${k.split('/')[0]} label service ${k.split('/')[1]} ${RUN_LABEL}=${run} --overwrite) and resume`]
      : [];
  });
  return new UserError(`Service ${firstAndMore(what, 3)} has the name of a kube-renumber helper `
    + `but is not one of this run's (labels ${MANAGED_LABEL}=true, ${BRIDGE_FOR_LABEL} or ${COVER_FOR_LABEL}${run ? `, ${RUN_LABEL}=${run}` : ''}): `
    + `it was left untouched; rename or remove it, then resume${label}${others.length > 0 ? `; ${others.join('; ')}` : ''}`, 'verify');
}

/** A move-services step is done when every Service is moved with its bridge and no cover of theirs (node-port covers included) is left. */
export function batchDone(view: ServiceView, items: readonly StepItem[]): boolean {
  return items.every((it) => itemDone(view, it)) && coversIn(view, items).length === 0 && nodePortCoversIn(view, items).length === 0;
}

/** What is wrong with one moved Service as seen (undefined: nothing). */
export function itemProblem(it: StepItem, svc: KubeObject | undefined, bridge: KubeObject | undefined): string | undefined {
  if (!svc) return `Service ${it.namespace}/${it.name} is missing`;
  if (svc.spec?.type === 'ExternalName' || !sameIPs(ipsOf(svc), it.to)) return `Service ${it.namespace}/${it.name} has ${ipsOf(svc).join(',') || 'no ClusterIP'}, expected ${it.to.join(',')}`;
  if (it.bridge && (!bridge || !sameIPs(ipsOf(bridge), it.from))) return `bridge ${it.namespace}/${it.bridge} is not at ${it.from.join(',')}`;
  return undefined;
}

/** Did a write of this process return the Service at `ips`? */
export function writtenAt(ev: MoveEvidence | undefined, ips: readonly string[]): boolean {
  return !!ev?.wrote && !!ev.service && ev.service.spec?.type !== 'ExternalName' && sameIPs(ipsOf(ev.service), ips);
}

/**
 * A moved Service at its IP with no IPAddress object for it: the apiserver stored the Service, then undid the IP's
 * allocation because the create reported an error (a client that died while its create was in flight cancels the
 * request's context after etcd committed: k8s.io/apiserver registry/generic/registry/store.go Create calls the
 * finish function with false, and pkg/registry/core/service/storage's Revert deletes the IPAddress). The apiserver's
 * IPAddress repair re-creates it on its next full pass (pkg/registry/core/service/ipallocator/controller/repairip.go,
 * every 3 minutes: repairLoopInterval in pkg/controlplane/instance.go).
 */
export const MISSING_IPADDRESS = 'there is no IPAddress object for it';
/** The IPAddress repair's interval plus a margin: how long a batch waits for it. */
export const IPADDRESS_REPAIR_WAIT_MS = 200_000;

/** The problem text of a moved Service's IP whose IPAddress object is missing, or points elsewhere. */
export function ipAddressProblem(ip: string, it: { namespace: string; name: string }, a: KubeObject | undefined): string | undefined {
  const ref = a?.spec?.parentRef;
  if (a && ref?.name === it.name && ref?.namespace === it.namespace) return undefined;
  return `IPAddress ${ip} does not point at Service ${it.namespace}/${it.name} (${!a ? MISSING_IPADDRESS : `it points at ${ref?.resource ?? 'resource'} ${ref?.namespace}/${ref?.name}`})`;
}

/** True when every problem is an IPAddress the apiserver's repair will re-create (and there is at least one). */
export function onlyMissingIPAddresses(problems: readonly string[]): boolean {
  return problems.length > 0 && problems.every((p) => p.endsWith(`(${MISSING_IPADDRESS})`));
}
