package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nfdNamespace is NFD's usual namespace and tasgen's default
// nodeFeatureNamespace; nfd-master itself reads NodeFeatures of every namespace.
const nfdNamespace = "node-feature-discovery"

// controlPlaneNode is the Node nfd-master "runs on". nfd-master annotates its
// own Node with its version at start and exits if that Node does not exist,
// so the harness registers one, tainted like a kind or kubeadm control-plane
// node so that nothing is placed there.
var controlPlaneNode = &corev1.Node{
	ObjectMeta: metav1.ObjectMeta{
		Name: "tasgen-control-plane",
		Labels: map[string]string{
			"kubernetes.io/hostname":                "tasgen-control-plane",
			"node-role.kubernetes.io/control-plane": "",
		},
		// What a kubelet registers; nfd-master's JSON patches add below it.
		Annotations: map[string]string{
			"node.alpha.kubernetes.io/ttl":                           "0",
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		},
	},
	Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
		Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule,
	}}},
}

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
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nfdNamespace}},
		controlPlaneNode.DeepCopy(),
	} {
		if err := c.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
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
	}, []string{"KUBERNETES_NAMESPACE=" + nfdNamespace, "NODE_NAME=" + controlPlaneNode.Name})
	if err != nil {
		return err
	}
	healthz := fmt.Sprintf("http://%s:%d/healthz", loopback, ports[0])
	return c.poll(ctx, "nfd-master", "its /healthz", func(ctx context.Context) (bool, error) { return httpOK(ctx, healthz), nil })
}
