// kwok pod Stages for the testbed (kwok `--config FILE`; pod Stages given there replace kwok's default
// pod Stages, node Stages stay default).
//
// Both modes start from kwok v0.7.0's "fast" pod Stages (kustomize/stage/pod/fast) and add:
//   - pod-ready waits `pod-ready.stage.kwok.x-k8s.io/delay` (a Go duration such as "3s", or an RFC 3339
//     time) when a pod carries that annotation; none otherwise (as fast);
//   - pod-complete (pods owned by a Job) waits `pod-complete.stage.kwok.x-k8s.io/delay` the same way
//     (fast completes at once), so a Job can keep a running pod for as long as a test needs.
//   - a pod with the readiness gate SERVING_GATE gets Ready=False and that gate's condition False from
//     pod-ready (ContainersReady and other gates True); the data plane sets them True when the pod serves.
// In 'calico' mode the pod network comes from Calico's calico-ipam, run by calico-cni.ts (or the stand-in calico-ipam.ts):
//   - pod-ready for a pod without hostNetwork also requires the annotation testbed.kube-renumber.io/pod-ip
//     and copies it into status.podIP/podIPs;
//   - pod-ready-host-network (spec.hostNetwork true) keeps kwok's node IP, as fast does.

// In 'cilium' mode the stages are those of 'node' mode (status.podIP written by someone else), and nothing is started
// for it: the test plays the Cilium agents (cilium-agents.ts) against the real cilium-operator.
export type PodIPAM = 'kwok' | 'calico' | 'node' | 'cilium';

/** Annotation the pod IPAM driver (calico-cni.ts, or a stand-in) writes with the bare pod IP; kwok copies it into status.podIP. */
export const POD_IP_ANNOTATION = 'testbed.kube-renumber.io/pod-ip';
/** Delay before a Job pod completes (Go duration, e.g. "1h"). */
export const COMPLETE_DELAY_ANNOTATION = 'pod-complete.stage.kwok.x-k8s.io/delay';
/** Delay before a pod becomes Running/Ready (Go duration, e.g. "3s"). */
export const READY_DELAY_ANNOTATION = 'pod-ready.stage.kwok.x-k8s.io/delay';
/**
 * Readiness gate (spec.readinessGates[].conditionType) for "Ready only when serving": kwok's pod-ready Stage
 * leaves such a pod Ready=False with this condition False; the testbed's data plane (dataplane.ts) sets both
 * True once it has wired the pod's netns and its process answers, as a kubelet with a readiness probe would.
 */
export const SERVING_GATE = 'testbed.kube-renumber.io/serving';
/**
 * Set on a pod whose container a test runs itself (test/testbed/pod-runner.ts). With kwokPodStages(mode,
 * { testRunsContainers: true }) kwok's pod-delete Stage skips such a pod: it stays Terminating until the test
 * deletes it with grace 0 once the process exited, as a kubelet does. Without that option nothing changes.
 */
export const CONTAINER_RUNNER_ANNOTATION = 'testbed.kube-renumber.io/container-runner';

// A pod with the readiness gate SERVING_GATE starts Ready=False with that gate's condition False (other gates
// True, ContainersReady True); the data plane sets both True once the pod's process answers. Without the
// gate: Ready=True at once, as kwok's fast Stages.
const READY_STATUS_HEAD = `      {{ $now := Now }}
      {{ $serving := false }}
      {{ range .spec.readinessGates }}{{ if eq .conditionType "${SERVING_GATE}" }}{{ $serving = true }}{{ end }}{{ end }}

      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: {{ if $serving }}"False"{{ else }}"True"{{ end }}
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      {{ range .spec.readinessGates }}
      - lastTransitionTime: {{ $now | Quote }}
        status: {{ if eq .conditionType "${SERVING_GATE}" }}"False"{{ else }}"True"{{ end }}
        type: {{ .conditionType | Quote }}
      {{ end }}

      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}

      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        {{ if eq .restartPolicy "Always" }}
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
        {{ else }}
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
        {{ end }}
      {{ end }}

      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
`;

const READY_STATUS_TAIL = `      phase: Running
      startTime: {{ $now | Quote }}
`;

const KWOK_POD_IP = `      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
`;

const CALICO_POD_IP = `      podIP: {{ index .metadata.annotations "${POD_IP_ANNOTATION}" | Quote }}
      podIPs:
      - ip: {{ index .metadata.annotations "${POD_IP_ANNOTATION}" | Quote }}
`;

/**
 * The pod-ready Stage; `podIP` is the status template's address part. Without `ipFirst` the Stage takes pods
 * without status.podIP and writes it; with it ('node' mode: the host-local stand-in node-ipam.ts writes
 * status.podIP/podIPs, one per family of the node's podCIDRs) it takes Pending pods that have one, and `podIP` is
 * empty: kwok's patch leaves the addresses as they are.
 */
function readyStage(name: string, extraExpressions: string, podIP: string, ipFirst = false): string {
  return `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: ${name}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.podIP'
      operator: '${ipFirst ? 'Exists' : 'DoesNotExist'}'
${ipFirst ? `    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
` : ''}${extraExpressions}  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["${READY_DELAY_ANNOTATION}"]'
  next:
    statusTemplate: |
${READY_STATUS_HEAD}${podIP}${READY_STATUS_TAIL}`;
}

const COMPLETE_STAGE = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values:
      - 'Job'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["${COMPLETE_DELAY_ANNOTATION}"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $root := . }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      {{ $origin := index $root.status.containerStatuses $index }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
`;

const DELETE_STAGE = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  next:
    finalizers:
      empty: true
    delete: true
`;

/** The kwok --config document (several Stage objects) for a pod IPAM mode. */
export function kwokPodStages(mode: PodIPAM, opts: { testRunsContainers?: boolean } = {}): string {
  const hostNetworkReady = readyStage(
    'pod-ready-host-network',
    `    - key: '.spec.hostNetwork'
      operator: 'In'
      values:
      - 'true'
`,
    KWOK_POD_IP,
  );
  const ready =
    mode === 'kwok'
      ? [readyStage('pod-ready', '', KWOK_POD_IP)]
      : mode === 'node' || mode === 'cilium'
      ? [
          readyStage(
            'pod-ready',
            `    - key: '.spec.hostNetwork'
      operator: 'NotIn'
      values:
      - 'true'
`,
            '',
            true,
          ),
          hostNetworkReady,
        ]
      : [
          readyStage(
            'pod-ready',
            `    - key: '.spec.hostNetwork'
      operator: 'NotIn'
      values:
      - 'true'
    - key: '.metadata.annotations["${POD_IP_ANNOTATION}"]'
      operator: 'Exists'
    - key: '.metadata.annotations["cni.projectcalico.org/podIP"]'
      operator: 'Exists'
`,
            CALICO_POD_IP,
          ),
          readyStage(
            'pod-ready-host-network',
            `    - key: '.spec.hostNetwork'
      operator: 'In'
      values:
      - 'true'
`,
            KWOK_POD_IP,
          ),
        ];
  const del = opts.testRunsContainers
    ? DELETE_STAGE.replace(
        "      operator: 'Exists'\n",
        `      operator: 'Exists'\n    - key: '.metadata.annotations["${CONTAINER_RUNNER_ANNOTATION}"]'\n      operator: 'DoesNotExist'\n`,
      )
    : DELETE_STAGE;
  return [...ready, COMPLETE_STAGE, del].join('---\n');
}
