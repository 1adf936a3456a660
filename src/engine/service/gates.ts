/**
 * The gate checks of a Service CIDR move that read the control plane: every apiserver on the new
 * --service-cluster-ip-range (restart-apiservers) and the kubelets handing out the new DNS IP (kubelet-cluster-dns).
 */
import type { KubeObject } from '../../cluster/types.ts';
import { errorLine } from '../../errors.ts';
import { EVENTS, getObject, listAll, PODS } from '../../kube/resources.ts';
import { allocatorDualWrite, DUAL_WRITE_GATE, featureEnabledInMetrics, MULTI_CIDR_GATE } from '../../plan/allocator-dual-write.ts';
import { minorOf } from '../../plan/preflight.ts';
import { readJournal, sinceLastRollback } from '../journal.ts';
import type { StepContext } from '../runner.ts';
import { kubeletsServeNewDNS } from '../kubelet-dns-gate.ts';
import { KubernetesStep } from './kubernetes.ts';

export class GateChecks extends KubernetesStep {
  /**
   * Every apiserver runs with the new flag: from their mirror pods' flags when the cluster shows them, else
   * from the apiserver's own complaint that ServiceCIDR/kubernetes does not match its flag (event
   * KubernetesDefaultServiceCIDRInconsistent naming the new range), else from ServiceCIDR/kubernetes
   * already holding the new range.
   */
  async apiserversOnNewRange(ctx: StepContext, gateId?: string): Promise<boolean> {
    const want = this.svc.to.join(',');
    const pods = await listAll(ctx.client, PODS, { namespace: 'kube-system', labelSelector: 'component=kube-apiserver' });
    const flags = pods.map((pod) => {
      const c = (pod.spec?.containers ?? []).find((x: any) => x.name === 'kube-apiserver') ?? pod.spec?.containers?.[0];
      const words: string[] = [...(c?.command ?? []), ...(c?.args ?? [])];
      const i = words.findIndex((w) => w.startsWith('--service-cluster-ip-range'));
      if (i < 0) return undefined;
      return words[i]!.includes('=') ? words[i]!.split('=')[1] : words[i + 1];
    });
    if (pods.length > 0) {
      const ok = flags.every((f) => f === want);
      if (!ok) ctx.log(`apiserver pods still on: ${[...new Set(flags)].join(' ')}`);
      return ok && this.dualWriteOffInPods(ctx, pods);
    }
    if (!(await this.dualWriteOffInMetrics(ctx))) return false;
    const sc = await getObject(ctx.client, this.SC, 'kubernetes');
    if (sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') === want) return true;
    const events = await listAll(ctx.client, EVENTS, { namespace: 'default', fieldSelector: 'reason=KubernetesDefaultServiceCIDRInconsistent' });
    const gateSeen = gateId ? this.firstJournalTime(ctx, 'gate', gateId) : undefined;
    const seen = events.some((e) => {
      const when = Date.parse(String(e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? ""));
      return String(e.message ?? '').includes(this.svc.to[0]!) && (!gateSeen || when >= gateSeen - 1000);
    });
    // Before 1.33 the apiserver raises no KubernetesDefaultServiceCIDRInconsistent event (v1.30.14's default ServiceCIDR
    // controller only creates the object and sets it Ready): without apiserver pods nothing in the API shows the flag
    if (!seen) {
      ctx.log('no kube-apiserver pod and no KubernetesDefaultServiceCIDRInconsistent event show the new --service-cluster-ip-range yet'
        + (this.scVersion === 'v1'
          ? ` (a restarted apiserver raises that event): resume once every apiserver runs with ${want}`
          : ` (networking.k8s.io/${this.scVersion} apiservers raise no such event): once every apiserver runs with ${want}, resume with --ack-gate ${gateId ?? 'restart-apiservers'}`));
    }
    return seen;
  }

  /** The minor of the plan's cluster when the allocator's dual write can be on there (1.31–1.34), else undefined. */
  private dualWriteMinor(): number | undefined {
    const minor = minorOf(this.plan.metadata.kubernetesVersion);
    return minor !== undefined && minor >= 31 && minor <= 34 ? minor : undefined;
  }

  /** No apiserver pod runs with the allocator's dual write on (allocator-dual-write.ts), read from its --feature-gates. */
  private dualWriteOffInPods(ctx: StepContext, pods: KubeObject[]): boolean {
    const minor = this.dualWriteMinor();
    if (minor === undefined) return true;
    const on = pods.filter((pod) => {
      const c = (pod.spec?.containers ?? []).find((x: any) => x.name === 'kube-apiserver') ?? pod.spec?.containers?.[0];
      const words: string[] = [...(c?.command ?? []), ...(c?.args ?? [])];
      const i = words.findIndex((w) => w.startsWith('--feature-gates'));
      const gates = i < 0 ? undefined : words[i]!.includes('=') ? words[i]!.slice(words[i]!.indexOf('=') + 1) : words[i + 1];
      return allocatorDualWrite(minor, gates) === true;
    });
    if (on.length > 0) ctx.log(dualWriteOnText(minor, on.map((p) => p.metadata?.name ?? '?').join(', ')));
    return on.length === 0;
  }

  /**
   * Without apiserver pods: the answering apiserver's own feature state (metric kubernetes_feature_enabled on
   * /metrics; behind a load balancer, one apiserver per read). Refuses only what it sees: an unreadable /metrics
   * (no permission) is logged and passes.
   */
  async dualWriteOffInMetrics(ctx: StepContext): Promise<boolean> {
    const minor = this.dualWriteMinor();
    if (minor === undefined) return true;
    let text: string;
    try {
      text = await ctx.client.request<string>('GET', '/metrics', { responseType: 'text' });
    } catch (e) {
      ctx.log(`the apiserver's feature gates cannot be read (GET /metrics: ${errorLine(e)}): make sure every kube-apiserver runs with ${DUAL_WRITE_GATE}=true`);
      return true;
    }
    const disable = featureEnabledInMetrics(text, DUAL_WRITE_GATE);
    const multi = featureEnabledInMetrics(text, MULTI_CIDR_GATE);
    if (disable === undefined) return true;
    const on = !disable && multi !== false;
    if (on) ctx.log(dualWriteOnText(minor, 'the answering apiserver (kubernetes_feature_enabled)'));
    return !on;
  }

  protected firstJournalTime(ctx: StepContext, event: string, step: string): number | undefined {
    const e = sinceLastRollback(readJournal(ctx.journal.path)).find((x) => x.event === event && x.step === step);
    return e ? Date.parse(e.ts) : undefined;
  }

  /** kubelets hand out the new DNS IP: kubeadm's kubelet-config ConfigMap says so, or with readKubeletConfig each Ready kubelet's configz. */
  async kubeletsOnNewDNS(ctx: StepContext): Promise<boolean> {
    const dns = this.plan.mapping.find((m) => m.isDNS);
    if (!dns) return true;
    if (this.opts.readKubeletConfig) return kubeletsServeNewDNS(ctx, dns.from, dns.to);
    const cms = await listAll(ctx.client, { group: '', version: 'v1', plural: 'configmaps', namespaced: true }, { namespace: 'kube-system' });
    const kc = cms.find((c) => /^kubelet-config(-\d+\.\d+)?$/.test(c.metadata?.name ?? ''));
    if (!kc) {
      ctx.log('kubelet clusterDNS cannot be read from the cluster: after changing it, resume with --ack-gate kubelet-cluster-dns');
      return false;
    }
    return dns.to.every((ip) => String(kc.data?.kubelet ?? '').includes(ip));
  }
}

function dualWriteOnText(minor: number, who: string): string {
  return `${who}: the ClusterIP allocator's dual write is on (Kubernetes 1.${minor}, feature gate ${DUAL_WRITE_GATE} off): with the new range it refuses every explicit ClusterIP `
    + `("the provided range does not match the current range"); restart every kube-apiserver with ${DUAL_WRITE_GATE}=true in --feature-gates (see the gate's patches), then resume`;
}
