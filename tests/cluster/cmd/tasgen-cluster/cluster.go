package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr/funcr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// loopback is the only address anything of the harness listens on or dials.
const loopback = "127.0.0.1"

type cluster struct {
	opts     options
	env      *envtest.Environment
	cfg      *rest.Config
	client   client.Client
	children []*child
	exited   chan error
}

func (c *cluster) path(name string) string { return filepath.Join(c.opts.workDir, name) }

func (c *cluster) start(ctx context.Context) error {
	// envtest reports through controller-runtime's logger; without one it
	// complains after 30s and swallows its messages.
	ctrllog.SetLogger(funcr.New(func(prefix, args string) { logf("%s %s", prefix, args) }, funcr.Options{}))
	c.exited = make(chan error, 4)

	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	webhookPort, healthPort := ports[0], ports[1]

	kueue, err := loadKueueManifests(c.opts.kueueDir, webhookPort)
	if err != nil {
		return err
	}
	nfdCRDs, err := readCRDs(filepath.Join(c.opts.nfdDir, "deployment", "base", "nfd-crds", "nfd-api-crds.yaml"))
	if err != nil {
		return fmt.Errorf("reading NFD CRDs: %w", err)
	}
	crds := append(kueue.crds, nfdCRDs...)
	for _, path := range c.opts.crds {
		extra, err := readCRDs(path)
		if err != nil {
			return fmt.Errorf("reading -crd: %w", err)
		}
		crds = append(crds, extra...)
	}
	if err := c.startControlPlane(crds); err != nil {
		return err
	}
	if err := step(ctx, "install Kueue's namespace, webhook Service and configurations", func() error { return c.installKueue(ctx, kueue) }); err != nil {
		return err
	}
	if err := step(ctx, "start Kueue", func() error { return c.startKueue(ctx, webhookPort, healthPort) }); err != nil {
		return err
	}
	if err := step(ctx, "start nfd-master", func() error { return c.startNFDMaster(ctx) }); err != nil {
		return err
	}
	if err := step(ctx, "start the admission policy status controller", func() error { return c.startPolicyStatus(ctx) }); err != nil {
		return err
	}
	if slices.Contains(c.opts.controllers, "job") {
		if err := step(ctx, "start the Job, TTL-after-finished and garbage collector controllers", func() error { return c.startJobControllers(ctx) }); err != nil {
			return err
		}
	}
	// The kubeconfig appears only now, atomically, so that its existence
	// means "every component is ready".
	return writeFileAtomic(c.opts.kubeconfig, c.env.KubeConfig)
}

func step(ctx context.Context, what string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	started := time.Now()
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	logf("%s: done in %s", what, time.Since(started).Round(time.Millisecond))
	return nil
}

func (c *cluster) startControlPlane(crds []*apiextensionsv1.CustomResourceDefinition) error {
	etcdLog, err := os.Create(c.path("etcd.log"))
	if err != nil {
		return err
	}
	apiLog, err := os.Create(c.path("kube-apiserver.log"))
	if err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcd := &envtest.Etcd{
		Path:    filepath.Join(c.opts.binDir, "etcd"),
		DataDir: c.path("etcd"),
		URL:     &url.URL{Scheme: "http", Host: net.JoinHostPort(loopback, strconv.Itoa(ports[0]))},
		Out:     etcdLog,
		Err:     etcdLog,
	}
	// envtest's default peer URL is "localhost:0"; pin it to 127.0.0.1.
	etcd.Configure().Set("listen-peer-urls", "http://"+net.JoinHostPort(loopback, strconv.Itoa(ports[1])))
	api := &envtest.APIServer{
		Path:    filepath.Join(c.opts.binDir, "kube-apiserver"),
		CertDir: c.path("kube-apiserver"),
		Out:     apiLog,
		Err:     apiLog,
	}
	api.SecureServing.ListenAddr = envtest.ListenAddr{Address: loopback, Port: strconv.Itoa(ports[2])}
	for _, dir := range []string{etcd.DataDir, api.CertDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	c.env = &envtest.Environment{
		ControlPlane: envtest.ControlPlane{Etcd: etcd, APIServer: api},
		// envtest makes serving certificates even with no webhooks to install;
		// keep them in the work dir rather than loose in /tmp.
		WebhookInstallOptions:    envtest.WebhookInstallOptions{LocalServingCertDir: c.path("envtest-webhook-certs")},
		ControlPlaneStartTimeout: c.opts.startTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	started := time.Now()
	if c.cfg, err = c.env.Start(); err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver (logs: %s, %s): %w", etcdLog.Name(), apiLog.Name(), err)
	}
	// Installed here rather than through Environment.CRDs: envtest would
	// replace the conversion webhooks of the CRDs whose types its scheme does
	// not know, and Kueue's certificate management needs them as shipped.
	// envtest waits 10s by default for the CRDs to be served, too short for the
	// integrations' CRDs on a loaded machine.
	if _, err := envtest.InstallCRDs(c.cfg, envtest.CRDInstallOptions{CRDs: crds, MaxTime: c.opts.startTimeout}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	logf("etcd and kube-apiserver at %s with %d CRDs: done in %s", c.cfg.Host, len(crds), time.Since(started).Round(time.Millisecond))
	if c.client, err = client.New(c.cfg, client.Options{}); err != nil {
		return err
	}
	// Kueue and nfd-master read this file; the public one is written last.
	return os.WriteFile(c.path("admin.kubeconfig"), c.env.KubeConfig, 0o600)
}

// wait blocks until a signal arrives or a component exits on its own.
func (c *cluster) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-c.exited:
		return err
	}
}

// stop ends the components in reverse order of start; it is safe to call
// after a partial start.
func (c *cluster) stop() error {
	var errs []error
	for i := len(c.children) - 1; i >= 0; i-- {
		errs = append(errs, c.children[i].stop(20*time.Second))
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping etcd and kube-apiserver: %w", err))
		}
	}
	return errors.Join(errs...)
}

// handedOut holds every port freePorts has returned in this process: a
// listener it closed frees the port, and the kernel may offer it again to a
// later call before the component it was meant for has bound it.
var handedOut = map[int]bool{}

// freePorts asks the kernel for n free loopback ports, none returned before
// by this process. All listeners stay open until every port is chosen, so
// none is handed out twice within a call either.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		if !handedOut[port] {
			handedOut[port] = true
			ports = append(ports, port)
		}
	}
	return ports, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
