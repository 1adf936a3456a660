/**
 * Control-plane components seen through their (mirror) pods in kube-system. Pure.
 */
import type { KubeObject } from './types.ts';
import { containerWords } from './flags.ts';

export type Component = 'kube-apiserver' | 'kube-controller-manager' | 'kube-proxy';

/**
 * Whether a pod is an instance of `component`: in kube-system and labelled component=<c> (kubeadm),
 * k8s-app=<c> (kOps), or named "<c>-<node>" (static pods' mirror pods, kube-proxy DaemonSet pods).
 */
export function isComponentPod(pod: KubeObject, component: Component): boolean {
  const md = pod.metadata;
  if (!md || md.namespace !== 'kube-system') return false;
  const l = md.labels ?? {};
  if (l.component === component || l['k8s-app'] === component) return true;
  return typeof md.name === 'string' && md.name.startsWith(`${component}-`);
}

/**
 * The container running `component` in a pod: named after it, or whose image or command names it.
 * undefined when none does (e.g. a "kube-apiserver-healthcheck" pod).
 */
export function componentContainer(pod: KubeObject, component: Component): Record<string, any> | undefined {
  const containers = pod.spec?.containers;
  if (!Array.isArray(containers)) return undefined;
  for (const c of containers) if (c && c.name === component) return c;
  const imageRe = new RegExp(`(^|/)${component}(-(amd64|arm64|arm|ppc64le|s390x))?(:|@|$)`);
  for (const c of containers) if (c && typeof c.image === 'string' && imageRe.test(c.image)) return c;
  for (const c of containers) {
    if (!c) continue;
    if (containerWords(c).some((w) => w === component || w.endsWith(`/${component}`))) return c;
  }
  return undefined;
}

/** The version tag of an image reference, e.g. "registry.k8s.io/kube-apiserver:v1.29.3@sha256:…" → "v1.29.3". */
export function imageVersion(image: unknown): string | undefined {
  if (typeof image !== 'string') return undefined;
  const noDigest = image.split('@')[0];
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  if (colon <= slash) return undefined;
  const tag = noDigest.slice(colon + 1);
  const m = /^v?(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)$/.exec(tag);
  return m ? `v${m[1]}` : undefined;
}
