package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installKueue creates what Kueue's manifests would besides its CRDs and
// Deployment: its namespace, the empty Secret for its webhook certificate, its
// webhook Service and its webhook configurations.
//
// The Service is of type ExternalName pointing at 127.0.0.1: the API server
// then dials the local webhook port while still verifying the certificate for
// the service's DNS name kueue-webhook-service.kueue-system.svc, which is the
// name Kueue's internal certificate management issues its certificate for. So
// the webhooks, the conversion webhooks and the CA injection run unchanged.
func (c *cluster) installKueue(ctx context.Context, m *kueueManifests) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: kueueNamespace, Name: kueueWebhookService},
			Spec: corev1.ServiceSpec{
				Type:         corev1.ServiceTypeExternalName,
				ExternalName: loopback,
				Ports:        []corev1.ServicePort{{Name: "https", Port: m.port}},
			},
		},
	}
	for _, s := range m.secrets {
		objs = append(objs, s)
	}
	for _, w := range m.mutating {
		objs = append(objs, w)
	}
	for _, w := range m.validating {
		objs = append(objs, w)
	}
	for _, obj := range objs {
		if err := c.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

const kueueConfig = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %[1]s
health:
  healthProbeBindAddress: "%[2]s"
metrics:
  bindAddress: "0"
webhook:
  host: "%[3]s"
  port: %[4]d
  certDir: "%[5]s"
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: %[6]s
  webhookSecretName: %[7]s
integrations:
  frameworks:
  - batch/job
`

// kueueFrameworks is the config's list of integrations, batch/job and the
// -integrations ones: Kueue builds the PodSets of those kinds from the real
// objects (their CRDs come with -crd).
func kueueFrameworks(extra []string) string {
	var b strings.Builder
	for _, name := range extra {
		fmt.Fprintf(&b, "  - %s\n", name)
	}
	return b.String()
}

// kueueFairSharing turns fair sharing on: Kueue v0.17 enables it when the
// section is present, with these two strategies by default.
const kueueFairSharing = `fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
`

// kueueFeatureGates turns TAS on explicitly (it is beta, on by default, in
// v0.17) and the visibility API server off: it would listen on all interfaces
// and needs an APIService that tests do not use.
const kueueFeatureGates = "TopologyAwareScheduling=true,VisibilityOnDemand=false"

func (c *cluster) startKueue(ctx context.Context, webhookPort, healthPort int) error {
	health := net.JoinHostPort(loopback, strconv.Itoa(healthPort))
	certDir := c.path("kueue-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	cfg := fmt.Sprintf(kueueConfig, kueueNamespace, health, loopback, webhookPort, certDir, kueueWebhookService, kueueWebhookSecret) +
		kueueFrameworks(c.opts.integrations)
	if c.opts.fairSharing {
		cfg += kueueFairSharing
	}
	cfgPath := c.path("kueue-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	// In a Deployment the kubelet mounts the webhook Secret into certDir, and
	// Kueue waits for the certificate to appear there; this does the mounting.
	go mirrorSecret(ctx, c.client, client.ObjectKey{Namespace: kueueNamespace, Name: kueueWebhookSecret}, certDir)
	_, err := c.spawn("kueue", []string{
		"--config=" + cfgPath,
		"--kubeconfig=" + c.path("admin.kubeconfig"),
		"--feature-gates=" + kueueFeatureGates,
	}, nil)
	if err != nil {
		return err
	}
	readyz := "http://" + health + "/readyz"
	if err := c.poll(ctx, "kueue", "its /readyz", func(ctx context.Context) (bool, error) { return httpOK(ctx, readyz), nil }); err != nil {
		return err
	}
	// Ready means the webhook server listens with its certificate; the API
	// server still has to see the injected CA. A server-side dry-run create
	// passes through the mutating and validating webhooks, so it succeeds
	// only once the whole path works.
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "ClusterQueue",
		"metadata":   map[string]any{"name": "tasgen-cluster-webhook-probe"},
		"spec":       map[string]any{},
	}}
	var lastErr error
	err = c.poll(ctx, "kueue", "a ClusterQueue dry-run through its webhooks", func(ctx context.Context) (bool, error) {
		lastErr = c.client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return lastErr == nil, nil
	})
	if err != nil && lastErr != nil {
		err = fmt.Errorf("%w (last error: %v)", err, lastErr)
	}
	return err
}

// poll waits for cond while the component named owner keeps running.
func (c *cluster) poll(ctx context.Context, owner, what string, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.startTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case exitErr := <-c.exited:
			return false, exitErr
		default:
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s (log: %s): %w", what, c.path(owner+".log"), err)
	}
	return nil
}

// mirrorSecret keeps dir's files equal to the Secret's data, as a kubelet's
// secret volume does, until ctx ends.
func mirrorSecret(ctx context.Context, cl client.Client, key client.ObjectKey, dir string) {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		var secret corev1.Secret
		if err := cl.Get(ctx, key, &secret); err == nil {
			for name, data := range secret.Data {
				path := filepath.Join(dir, name)
				if current, err := os.ReadFile(path); err != nil || !bytes.Equal(current, data) {
					if err := writeFileAtomic(path, data); err != nil {
						logf("mounting secret %s: %v", key, err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func httpOK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
