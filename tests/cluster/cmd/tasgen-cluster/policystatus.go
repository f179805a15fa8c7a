package main

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus"
)

// startPolicyStatus runs kube-controller-manager's ValidatingAdmissionPolicy
// status controller (the upstream package, wired as kube-controller-manager
// wires it, in this process): it type-checks each policy's CEL against the
// schemas of the resources the policy matches, CRDs included (read from the
// API server's OpenAPI), and writes the warnings to status.typeChecking. The
// API server itself only compiles the CEL. Nothing else of the controller
// manager runs here.
func (c *cluster) startPolicyStatus(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return err
	}
	checker := &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: cs.Discovery()},
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery())),
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	ctrl, err := validatingadmissionpolicystatus.NewController(
		factory.Admissionregistration().V1().ValidatingAdmissionPolicies(),
		cs.AdmissionregistrationV1().ValidatingAdmissionPolicies(),
		checker,
	)
	if err != nil {
		return fmt.Errorf("admission policy status controller: %w", err)
	}
	factory.Start(ctx.Done())
	go ctrl.Run(ctx, 1)
	return nil
}
