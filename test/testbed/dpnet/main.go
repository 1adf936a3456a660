// dpnet: small network tool for the kube-renumber testbed's data plane. Runs inside network namespaces
// (`ip netns exec NS dpnet ...`).
//
//	dpnet fwd -listen ADDR -to ADDR     byte-for-byte stream forwarder; ADDR is tcp:HOST:PORT or unix:PATH
//	dpnet serve -listen HOST:PORT -name NAME
//	                                    HTTP server answering every request with "NAME\n"
//	dpnet get [-timeout D] [-k] URL     prints the body of one HTTP GET (exit 1 on any error or a status
//	                                    other than 200); -k: https without verifying the certificate
//	dpnet tls [-timeout D] [-sni NAME] HOST:PORT
//	                                    one TLS handshake (certificate not verified), prints the protocol
//	                                    version and the server certificate's subject, DNS names and IPs
//	dpnet wait [-timeout D] [-interval D] TARGET...
//	                                    polls until every TARGET answers: tcp:HOST:PORT accepts a
//	                                    connection, http://URL answers 200 (exit 1 at the timeout)
//	dpnet resolve -server HOST:PORT [-timeout D] NAME
//	                                    resolves NAME (A/AAAA, as an absolute name) through that DNS server
//	                                    only, prints the addresses
//
// Standard library only; built by dataplane-build.sh (file mode, no module).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

func splitAddr(a string) (string, string) {
	if s, ok := strings.CutPrefix(a, "unix:"); ok {
		return "unix", s
	}
	if s, ok := strings.CutPrefix(a, "tcp:"); ok {
		return "tcp", s
	}
	return "tcp", a
}

func fwd(args []string) {
	fs := flag.NewFlagSet("fwd", flag.ExitOnError)
	listen := fs.String("listen", "", "tcp:HOST:PORT or unix:PATH")
	to := fs.String("to", "", "tcp:HOST:PORT or unix:PATH")
	fs.Parse(args)
	ln, lp := splitAddr(*listen)
	tn, tp := splitAddr(*to)
	if ln == "unix" {
		os.Remove(lp)
	}
	l, err := net.Listen(ln, lp)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "forwarding %s -> %s\n", *listen, *to)
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go func() {
			defer c.Close()
			u, err := net.DialTimeout(tn, tp, 5*time.Second)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return
			}
			defer u.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				io.Copy(dst, src)
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
				}
			}
			go pipe(u, c)
			go pipe(c, u)
			wg.Wait()
		}()
	}
}

func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := fs.String("listen", ":8080", "HOST:PORT")
	name := fs.String("name", "", "answer")
	fs.Parse(args)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s\n", *name)
	})
	fmt.Fprintf(os.Stderr, "serving %q on %s\n", *name, *listen)
	if err := http.ListenAndServe(*listen, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func get(args []string) {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	timeout := fs.Duration("timeout", 3*time.Second, "")
	insecure := fs.Bool("k", false, "https: do not verify the server certificate")
	fs.Parse(args)
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	if *insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	c := &http.Client{Timeout: *timeout, Transport: tr}
	r, err := c.Get(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil || r.StatusCode != 200 {
		fmt.Fprintln(os.Stderr, r.Status, err)
		os.Exit(1)
	}
	os.Stdout.Write(b)
}

func tlsHandshake(args []string) {
	fs := flag.NewFlagSet("tls", flag.ExitOnError)
	timeout := fs.Duration("timeout", 3*time.Second, "")
	sni := fs.String("sni", "", "server name to send (default: none)")
	fs.Parse(args)
	d := &net.Dialer{Timeout: *timeout}
	c, err := tls.DialWithDialer(d, "tcp", fs.Arg(0), &tls.Config{InsecureSkipVerify: true, ServerName: *sni})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	st := c.ConnectionState()
	if len(st.PeerCertificates) == 0 {
		fmt.Fprintln(os.Stderr, "no server certificate")
		os.Exit(1)
	}
	cert := st.PeerCertificates[0]
	ips := make([]string, 0, len(cert.IPAddresses))
	for _, ip := range cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	fmt.Printf("version=%s\nsubject=%s\ndns=%s\nips=%s\n", tls.VersionName(st.Version), cert.Subject.String(),
		strings.Join(cert.DNSNames, ","), strings.Join(ips, ","))
}

// waitFor polls one target until it answers or the deadline passes.
func waitFor(target string, deadline time.Time, interval time.Duration) error {
	var last error
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%s: %v", target, last)
		}
		step := min(left, time.Second)
		if strings.HasPrefix(target, "http://") {
			c := &http.Client{Timeout: step, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
			r, err := c.Get(target)
			if err == nil {
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
				if r.StatusCode == 200 {
					return nil
				}
				err = fmt.Errorf("%s", r.Status)
			}
			last = err
		} else {
			n, a := splitAddr(target)
			c, err := net.DialTimeout(n, a, step)
			if err == nil {
				c.Close()
				return nil
			}
			last = err
		}
		time.Sleep(min(interval, time.Until(deadline)))
	}
}

func wait(args []string) {
	fs := flag.NewFlagSet("wait", flag.ExitOnError)
	timeout := fs.Duration("timeout", 60*time.Second, "")
	interval := fs.Duration("interval", 20*time.Millisecond, "")
	fs.Parse(args)
	deadline := time.Now().Add(*timeout)
	for _, t := range fs.Args() {
		if err := waitFor(t, deadline, *interval); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func resolve(args []string) {
	fs := flag.NewFlagSet("resolve", flag.ExitOnError)
	server := fs.String("server", "", "HOST:PORT")
	timeout := fs.Duration("timeout", 3*time.Second, "")
	fs.Parse(args)
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, *server)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	name := fs.Arg(0)
	if !strings.HasSuffix(name, ".") {
		name += "." // absolute: no search list of the host's resolv.conf
	}
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(addrs, "\n"))
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dpnet fwd|serve|get|tls|wait|resolve ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "fwd":
		fwd(os.Args[2:])
	case "serve":
		serve(os.Args[2:])
	case "get":
		get(os.Args[2:])
	case "tls":
		tlsHandshake(os.Args[2:])
	case "wait":
		wait(os.Args[2:])
	case "resolve":
		resolve(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		os.Exit(2)
	}
}
