/**
 * The Kubernetes server version when no live /version is available (offline input). Pure.
 *
 * Preference, most to least direct: the kube-apiserver mirror pods' image tag (the lowest when HA
 * apiservers differ mid-upgrade: the oldest one still serving decides what the API offers); the
 * kubeadm ClusterConfiguration kubernetesVersion (ConfigMap or file); the kOps spec kubernetesVersion
 * (desired, maybe not yet rolled out); the lowest node kubeletVersion (kubelets may lag the apiserver by
 * up to three minors, so this is a lower bound).
 */
import type { KubeObject } from './types.ts';
import { componentContainer, imageVersion, isComponentPod } from './components.ts';
import { isKopsCluster } from './kops-spec.ts';
import { normalizeVersion, parseEmbeddedYaml } from './kubeadm-config.ts';

/** [major, minor, patch] of "v1.29.3", "1.29.3+k3s1", "v1.30.0-rc.1"; undefined if not a version. */
export function parseVersion(v: string): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

/** Orders versions numerically; unparseable versions sort last. */
export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a);
  const y = parseVersion(b);
  if (!x || !y) return x ? -1 : y ? 1 : 0;
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

function lowest(vs: string[]): string | undefined {
  const ok = vs.filter((v) => parseVersion(v) !== undefined);
  return ok.length === 0 ? undefined : ok.reduce((a, b) => (compareVersions(b, a) < 0 ? b : a));
}

export function inferServerVersion(objects: KubeObject[], configs: KubeObject[]): string | undefined {
  const apiserver: string[] = [];
  const kubelet: string[] = [];
  let kubeadm: string | undefined;
  let kops: string | undefined;
  const visitConfig = (o: KubeObject): void => {
    if (isKopsCluster(o) && typeof o.spec?.kubernetesVersion === 'string') kops ??= normalizeVersion(o.spec.kubernetesVersion);
    if (o.kind === 'ClusterConfiguration' && typeof o.kubernetesVersion === 'string') kubeadm ??= normalizeVersion(o.kubernetesVersion);
  };
  for (const o of objects) {
    if (!o || typeof o !== 'object') continue;
    switch (o.kind) {
      case 'Pod':
        if (isComponentPod(o, 'kube-apiserver')) {
          const v = imageVersion(componentContainer(o, 'kube-apiserver')?.image);
          if (v) apiserver.push(v);
        }
        break;
      case 'Node': {
        const v = o.status?.nodeInfo?.kubeletVersion;
        if (typeof v === 'string') kubelet.push(v);
        break;
      }
      case 'ConfigMap':
        if (o.metadata?.namespace === 'kube-system' && o.metadata?.name === 'kubeadm-config' && typeof o.data?.ClusterConfiguration === 'string') {
          const cc = parseEmbeddedYaml(o.data.ClusterConfiguration);
          if (typeof cc === 'object' && typeof cc.kubernetesVersion === 'string') kubeadm ??= normalizeVersion(cc.kubernetesVersion);
        }
        break;
      default:
        visitConfig(o);
    }
  }
  for (const c of configs) if (c && typeof c === 'object') visitConfig(c);
  return lowest(apiserver) ?? kubeadm ?? kops ?? lowest(kubelet);
}
