// tbsup: a tiny process supervisor for the kube-renumber testbed.
//
//	tbsup [-grace 5s] -- COMMAND [ARGS...]
//
// It starts COMMAND in a new process group (stdin /dev/null, stdout/stderr inherited) and
//   - when its own stdin reaches EOF (the parent closed the pipe, or the parent died, even by SIGKILL),
//     sends SIGTERM to the child's process group, then SIGKILL after the grace period;
//   - on SIGTERM/SIGINT/SIGHUP to itself, does the same;
//   - the child also gets PDEATHSIG=SIGKILL, so it dies if tbsup itself is SIGKILLed;
//   - when the child exits, kills whatever is left in its process group and exits with the child's code.
//
// Standard library only; built by build.sh into the testbed bin directory (file mode, no module).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	grace := flag.Duration("grace", 5*time.Second, "time between SIGTERM and SIGKILL")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: tbsup [-grace D] -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	// PDEATHSIG fires when the *thread* that forked the child exits: keep the fork on the main thread.
	runtime.LockOSThread()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "tbsup: start %s: %v\n", args[0], err)
		os.Exit(127)
	}
	pgid := cmd.Process.Pid

	stop := make(chan string, 4)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop <- "stdin closed"
	}()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		s := <-sigs
		stop <- "signal " + s.String()
	}()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var waitErr error
	select {
	case waitErr = <-done:
	case why := <-stop:
		fmt.Fprintf(os.Stderr, "tbsup: %s: SIGTERM to process group %d\n", why, pgid)
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case waitErr = <-done:
		case <-time.After(*grace):
			fmt.Fprintf(os.Stderr, "tbsup: grace %s over: SIGKILL to process group %d\n", *grace, pgid)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			waitErr = <-done
		}
	}
	// Leftovers in the group (grandchildren) go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)

	code := 0
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		} else {
			code = ee.ExitCode()
		}
	} else if waitErr != nil {
		code = 1
	}
	os.Exit(code)
}
