package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// Apply creates or updates, as the admin, every object of manifests, a
// multi-document YAML (or JSON) stream, in order: server-side apply with
// field manager "kubetest", forced, and strict field validation, so that
// applying the same manifests twice is a no-op and a misspelt field is an
// error instead of being dropped. Any kind the API server serves works
// (Namespace, ServiceAccount, Role, RoleBinding, ConfigMap, Deployment,
// Service, Job, …); a namespaced object without a namespace goes to
// "default". The first failing document stops Apply; its error names the
// document's position, kind and name.
func (c *Cluster) Apply(ctx context.Context, manifests []byte) error {
	cfg := c.AdminConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	// Deferred: discovery is read once, and again when a kind is not
	// found (a CRD applied by an earlier document).
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for doc := 1; ; doc++ {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("apply: document %d does not parse: %w", doc, err)
		}
		if len(obj.Object) == 0 {
			continue // an empty document (a trailing ---)
		}
		if err := applyOne(ctx, dyn, mapper, &obj); err != nil {
			return fmt.Errorf("apply: document %d (%s %q): %w", doc, obj.GetKind(), obj.GetName(), err)
		}
	}
}

// applyOne server-side-applies obj.
func applyOne(ctx context.Context, dyn dynamic.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return errors.New("no apiVersion or kind: every document needs both")
	}
	if obj.GetName() == "" {
		return errors.New("no metadata.name")
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		mapper.Reset()
		m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return fmt.Errorf("the API server does not serve %s: %w", gvk, err)
	}
	res := dyn.Resource(m.Resource)
	var ri dynamic.ResourceInterface = res
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace("default")
		}
		ri = res.Namespace(obj.GetNamespace())
	}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	force := true
	_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
		FieldManager: "kubetest", Force: &force, FieldValidation: metav1.FieldValidationStrict,
	})
	return err
}
