// fakecri: the CRI stand-in behind the testbed's real kubelet (test/testbed/kubelet.ts). It serves the
// RuntimeService and ImageService of k8s.io/cri-api on a unix socket with the in-memory fakes of
// k8s.io/cri-client/pkg/fake (runtime and network Ready, no sandboxes, no containers, no images): enough for a
// kubelet to register its node, report Ready and serve its API (configz, healthz); no pod runs behind it.
//
// Built by test/testbed/kubelet-build.sh inside the kubelet's wrapper module (same k8s.io versions as the
// kubelet), never from this directory.
//
//	fakecri -listen unix:///tmp/x/cri.sock
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cri-client/pkg/fake"
)

func main() {
	listen := flag.String("listen", "", "unix:///path/to/socket")
	flag.Parse()
	if *listen == "" {
		fmt.Fprintln(os.Stderr, "fakecri: -listen unix:///path is required")
		os.Exit(2)
	}
	rt := fake.NewFakeRemoteRuntime()
	if err := rt.Start(*listen); err != nil {
		fmt.Fprintf(os.Stderr, "fakecri: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fakecri: serving on %s\n", *listen)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	rt.Stop()
}
