// Seed 000 on the oldest Kubernetes `npm test` builds (OLDEST_VERSION, 1.30; the seed ran 1.29, served whole at v1.29.15,
// the matrix's 1.29: docs/testbed.md): kOps' default Service range 100.64.0.0/13, which collides with
// Tailscale, moved in place to 172.24.0.0/15 as the seed did, with ServiceCIDR served only as networking.k8s.io/v1alpha1
// once the MultiCIDRServiceAllocator gate and its runtime-config are on (as on 1.29): the plan opens with that gate, the
// test plays it, kube-dns and default/kubernetes move in place; verify; a second run rolled back.

import { install } from '../../src/install.ts';
import { OLDEST_VERSION } from '../testbed/build.ts';
import { serviceScenario } from '../matrix/scenarios.ts';

install();

// 8 Services (the matrix runs 20): the gate, the v1alpha1 paths and every step are the same, in less of `npm test`'s time
serviceScenario(OLDEST_VERSION, { old: '100.64.0.0/13', next: '172.24.0.0/15', second: '10.112.0.0/16', services: 8 });
