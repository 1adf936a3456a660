/**
 * Istio's outbound capture: the pod-template annotations traffic.sidecar.istio.io/includeOutboundIPRanges and
 * excludeOutboundIPRanges (comma-separated CIDRs), and their mesh-wide defaults, values.global.proxy.includeIPRanges
 * and excludeIPRanges in the `values` JSON of ConfigMap istio-sidecar-injector[-<revision>] (docs/references.md).
 */
import type { KubeObject, ReferenceSource } from '../types.ts';
import { podTemplateOf, sourceBase, under, type ReferenceSourceModule } from './types.ts';

const ANNOTATIONS: Readonly<Record<string, 'capture' | 'nocapture'>> = {
  'traffic.sidecar.istio.io/includeOutboundIPRanges': 'capture',
  'traffic.sidecar.istio.io/excludeOutboundIPRanges': 'nocapture',
};
const VALUES: Readonly<Record<string, 'capture' | 'nocapture'>> = { includeIPRanges: 'capture', excludeIPRanges: 'nocapture' };

function read(o: KubeObject): ReferenceSource[] {
  const out: ReferenceSource[] = [];
  const t = podTemplateOf(o);
  if (t) {
    for (const [key, use] of Object.entries(ANNOTATIONS)) {
      const v = t.metadata.annotations?.[key];
      if (typeof v === 'string' && v.trim() !== '') {
        out.push({ ...sourceBase(o), field: under(t.at, `metadata.annotations["${key}"]`), format: 'csv', use, values: [v] });
      }
    }
  }
  if (o.kind === 'ConfigMap' && /^istio-sidecar-injector(-.+)?$/.test(o.metadata?.name ?? '') && typeof o.data?.values === 'string') {
    let values: any;
    try { values = JSON.parse(o.data.values); } catch { return out; }
    for (const [key, use] of Object.entries(VALUES)) {
      const v = values?.global?.proxy?.[key];
      if (typeof v === 'string' && v.trim() !== '') {
        out.push({ ...sourceBase(o), field: `data["values"].global.proxy.${key}`, format: 'csv', use, values: [v] });
      }
    }
  }
  return out;
}

/** Reads the workloads and ConfigMaps the workload and ConfigMap sources list. */
export const istio: ReferenceSourceModule = { lists: [], read };
