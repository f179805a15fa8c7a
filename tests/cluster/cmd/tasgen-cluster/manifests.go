package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Names that Kueue's config/default kustomization gives its objects
// (namespace kueue-system, namePrefix kueue-). Kueue's internal certificate
// management derives the webhook configuration names from the service name,
// so these must match what a real installation has.
const (
	kueueNamespace      = "kueue-system"
	kueueNamePrefix     = "kueue-"
	kueueWebhookService = "kueue-webhook-service"
	kueueWebhookSecret  = "kueue-webhook-server-cert"
)

type kueueManifests struct {
	crds       []*apiextensionsv1.CustomResourceDefinition
	mutating   []*admissionv1.MutatingWebhookConfiguration
	validating []*admissionv1.ValidatingWebhookConfiguration
	secrets    []*corev1.Secret // the empty secret cert-controller fills
	port       int32
}

// loadKueueManifests reads Kueue's CRDs and webhook configurations from the
// module, and applies what kustomize would: the conversion-webhook patches
// listed in config/components/crd/kustomization.yaml and the service
// namespace and name prefix of config/default. Every service reference is
// pointed at the local webhook port.
func loadKueueManifests(moduleDir string, port int) (*kueueManifests, error) {
	m := &kueueManifests{port: int32(port)}
	crdDir := filepath.Join(moduleDir, "config", "components", "crd")
	var err error
	if m.crds, err = readCRDDir(filepath.Join(crdDir, "bases")); err != nil {
		return nil, fmt.Errorf("reading Kueue CRDs: %w", err)
	}
	if err := m.applyConversionPatches(crdDir); err != nil {
		return nil, fmt.Errorf("applying Kueue's conversion patches: %w", err)
	}
	webhooks := filepath.Join(moduleDir, "config", "components", "webhook", "manifests.yaml")
	if m.mutating, err = decodeFile[admissionv1.MutatingWebhookConfiguration](webhooks, "MutatingWebhookConfiguration"); err != nil {
		return nil, err
	}
	if m.validating, err = decodeFile[admissionv1.ValidatingWebhookConfiguration](webhooks, "ValidatingWebhookConfiguration"); err != nil {
		return nil, err
	}
	secret := filepath.Join(moduleDir, "config", "components", "internalcert", "secret.yaml")
	if m.secrets, err = decodeFile[corev1.Secret](secret, "Secret"); err != nil {
		return nil, err
	}
	for _, s := range m.secrets {
		s.Namespace, s.Name = kueueNamespace, kueueNamePrefix+s.Name
		if s.Name != kueueWebhookSecret {
			return nil, fmt.Errorf("%s: expected the secret %s, found %s", secret, kueueWebhookSecret, s.Name)
		}
	}
	if len(m.mutating) == 0 || len(m.validating) == 0 {
		return nil, fmt.Errorf("%s: expected mutating and validating webhook configurations", webhooks)
	}
	for _, w := range m.mutating {
		w.Name = kueueNamePrefix + w.Name
		for i := range w.Webhooks {
			m.retarget(&w.Webhooks[i].ClientConfig)
		}
	}
	for _, w := range m.validating {
		w.Name = kueueNamePrefix + w.Name
		for i := range w.Webhooks {
			m.retarget(&w.Webhooks[i].ClientConfig)
		}
	}
	return m, nil
}

func (m *kueueManifests) retarget(cc *admissionv1.WebhookClientConfig) {
	path := "/"
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	cc.Service = &admissionv1.ServiceReference{Namespace: kueueNamespace, Name: kueueWebhookService, Path: &path, Port: &m.port}
}

func (m *kueueManifests) applyConversionPatches(crdDir string) error {
	var kustomization struct {
		Patches []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	raw, err := os.ReadFile(filepath.Join(crdDir, "kustomization.yaml"))
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, &kustomization); err != nil {
		return err
	}
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range m.crds {
		byName[crd.Name] = crd
	}
	for _, p := range kustomization.Patches {
		patches, err := decodeFile[apiextensionsv1.CustomResourceDefinition](filepath.Join(crdDir, p.Path), "CustomResourceDefinition")
		if err != nil {
			return err
		}
		for _, patch := range patches {
			crd, ok := byName[patch.Name]
			conv := patch.Spec.Conversion
			if !ok || conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
				return fmt.Errorf("%s: not a conversion-webhook patch of a known CRD", p.Path)
			}
			svc := conv.Webhook.ClientConfig.Service
			svc.Namespace, svc.Name, svc.Port = kueueNamespace, kueueWebhookService, &m.port
			crd.Spec.Conversion = conv
		}
	}
	return nil
}

// readCRDDir reads every CRD of the *.yaml files of dir, in name order.
func readCRDDir(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml files in %s", dir)
	}
	sort.Strings(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		got, err := readCRDs(f)
		if err != nil {
			return nil, err
		}
		crds = append(crds, got...)
	}
	return crds, nil
}

func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := decodeFile[apiextensionsv1.CustomResourceDefinition](path, "CustomResourceDefinition")
	if err == nil && len(crds) == 0 {
		err = fmt.Errorf("%s: no CustomResourceDefinition in it", path)
	}
	return crds, err
}

// decodeFile returns the documents of a multi-document YAML file whose kind
// is kind, decoded into T.
func decodeFile[T any](path, kind string) ([]*T, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out []*T
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if meta.Kind != kind {
			continue
		}
		obj := new(T)
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, obj)
	}
}
