// Command tasgen-cluster runs a real, throw-away Kubernetes control plane on
// loopback for tasgen's end-to-end tests: etcd and kube-apiserver (started the
// way controller-runtime's envtest starts them), Kueue's controller manager
// with its webhooks, and nfd-master. It writes a kubeconfig once everything is
// ready and tears it all down on SIGINT/SIGTERM or when a component dies.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type options struct {
	binDir       string
	kueueDir     string
	nfdDir       string
	workDir      string
	kubeconfig   string
	nfdLabelNs   string
	startTimeout time.Duration
	controllers  []string
	integrations []string
	crds         []string
	fairSharing  bool
}

// optionalControllers are the kube-controller-manager controllers -controllers
// may add; none runs by default, so that Kueue's batch/job integration is
// tested as before, with Jobs that no Job controller ever runs.
var optionalControllers = map[string]bool{"job": true}

func parseFlags() (options, error) {
	var o options
	// An own flag set: controller-runtime registers its own -kubeconfig on the global one.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.StringVar(&o.binDir, "bin-dir", "", "directory holding the etcd, kube-apiserver, kueue and nfd-master binaries")
	fs.StringVar(&o.kueueDir, "kueue-dir", "", "root of the sigs.k8s.io/kueue module (go list -m -f '{{.Dir}}')")
	fs.StringVar(&o.nfdDir, "nfd-dir", "", "root of the sigs.k8s.io/node-feature-discovery module")
	fs.StringVar(&o.workDir, "work-dir", "", "directory for data, certificates and logs (default: a new temp dir, removed on exit)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (default: <work-dir>/kubeconfig)")
	fs.StringVar(&o.nfdLabelNs, "nfd-extra-label-ns", "topology.gpustack.ai",
		"comma-separated label namespaces nfd-master may publish besides NFD's own")
	fs.DurationVar(&o.startTimeout, "start-timeout", 3*time.Minute, "how long each component may take to become ready")
	fs.Func("controllers", "comma-separated kube-controller-manager controllers to run besides the VAP status controller; "+
		"\"job\": the Job, TTL-after-finished and garbage collector controllers (default: none)", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if !optionalControllers[name] {
				return fmt.Errorf("unknown controller %q (known: job)", name)
			}
			o.controllers = append(o.controllers, name)
		}
		return nil
	})
	fs.Func("integrations", "comma-separated Kueue integrations (frameworks) to enable besides batch/job, "+
		"e.g. jobset.x-k8s.io/jobset,pod (default: none)", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if name == "" || name == "batch/job" {
				return fmt.Errorf("-integrations: %q is not an integration to add (batch/job is always on)", name)
			}
			o.integrations = append(o.integrations, name)
		}
		return nil
	})
	fs.Func("crd", "a YAML file of CustomResourceDefinitions to install with Kueue's and NFD's, "+
		"such as an integration's (repeatable)", func(v string) error {
		o.crds = append(o.crds, v)
		return nil
	})
	fs.BoolVar(&o.fairSharing, "kueue-fair-sharing", false, "run Kueue with fair sharing "+
		"(its Configuration's fairSharing, both preemption strategies; default: off)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return o, err
	}
	var missing []string
	for name, v := range map[string]string{"-bin-dir": o.binDir, "-kueue-dir": o.kueueDir, "-nfd-dir": o.nfdDir} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return o, fmt.Errorf("missing required flags: %s", strings.Join(missing, ", "))
	}
	return o, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "tasgen-cluster: error: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	for _, bin := range []string{"etcd", "kube-apiserver", "kueue", "nfd-master"} {
		if _, err := os.Stat(filepath.Join(o.binDir, bin)); err != nil {
			return fmt.Errorf("binary %s not found in -bin-dir: %w", bin, err)
		}
	}
	removeWorkDir := false
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "tasgen-cluster-"); err != nil {
			return err
		}
		removeWorkDir = true
	}
	if o.kubeconfig == "" {
		o.kubeconfig = filepath.Join(o.workDir, "kubeconfig")
	}

	// Signals are caught from the start so that a Ctrl-C during start-up
	// still stops what was already started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	c := &cluster{opts: o}
	runErr := c.start(ctx)
	if runErr == nil {
		logf("ready: kubeconfig=%s work-dir=%s", o.kubeconfig, o.workDir)
		runErr = c.wait(ctx)
	}
	stopErr := c.stop()
	// A kubeconfig of a stopped cluster would only mislead.
	if err := os.Remove(o.kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
		stopErr = errors.Join(stopErr, err)
	}
	if removeWorkDir {
		_ = os.RemoveAll(o.workDir)
	}
	if errors.Is(runErr, context.Canceled) {
		runErr = nil // a signal is the normal way to stop
	}
	return errors.Join(runErr, stopErr)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "tasgen-cluster: "+format+"\n", args...)
}
