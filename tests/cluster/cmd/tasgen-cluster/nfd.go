package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
)

// nfdNamespace is NFD's usual namespace and tasgen's default
// nodeFeatureNamespace; nfd-master itself reads NodeFeatures of every namespace.
const nfdNamespace = "node-feature-discovery"

// startNFDMaster runs nfd-master, which turns NodeFeature objects into Node
// labels. Label namespaces other than NFD's own are dropped unless listed in
// -extra-label-ns, which is why tasgen's namespaces are passed.
//
// nfd-master v0.19.0 serves /healthz and /metrics on ":<port>" (every
// interface) and has no flag to bind it elsewhere; it is given a free port and
// only ever polled on 127.0.0.1.
func (c *cluster) startNFDMaster(ctx context.Context) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	// An empty config file: the default path under /etc must not be read.
	cfgPath := c.path("nfd-master.conf")
	if err := os.WriteFile(cfgPath, nil, 0o600); err != nil {
		return err
	}
	_, err = c.spawn("nfd-master", []string{
		"-kubeconfig=" + c.path("admin.kubeconfig"),
		"-config=" + cfgPath,
		"-port=" + strconv.Itoa(ports[0]),
		"-extra-label-ns=" + c.opts.nfdLabelNs,
	}, []string{"KUBERNETES_NAMESPACE=" + nfdNamespace, "NODE_NAME=tasgen-cluster"})
	if err != nil {
		return err
	}
	healthz := fmt.Sprintf("http://%s:%d/healthz", loopback, ports[0])
	return c.poll(ctx, "nfd-master", "its /healthz", func(ctx context.Context) (bool, error) { return httpOK(ctx, healthz), nil })
}
