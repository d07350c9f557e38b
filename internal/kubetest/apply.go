package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Apply creates every object of manifests (multi-document YAML) in
// namespace, as `kubectl apply` of new objects would: ServiceAccounts,
// Roles, RoleBindings, ConfigMaps and Secrets (the kinds soakd's manifests
// hold). An unknown field or kind is an error, so a manifest that would
// not apply on a cluster does not apply here either.
func Apply(ctx context.Context, cs kubernetes.Interface, namespace string, manifests []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	decode := scheme.Codecs.UniversalDeserializer()
	for n := 0; ; n++ {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw.Raw), []byte("null")) {
			continue
		}
		obj, gvk, err := decode.Decode(raw.Raw, nil, nil)
		if err != nil {
			return fmt.Errorf("document %d: %w", n, err)
		}
		opts := metav1.CreateOptions{FieldValidation: "Strict"}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(namespace).Create(ctx, o, opts)
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(namespace).Create(ctx, o, opts)
		case *rbacv1.RoleBinding:
			for i := range o.Subjects {
				if o.Subjects[i].Kind == rbacv1.ServiceAccountKind && o.Subjects[i].Namespace == "" {
					o.Subjects[i].Namespace = namespace // kubectl -n fills it the same way
				}
			}
			_, err = cs.RbacV1().RoleBindings(namespace).Create(ctx, o, opts)
		case *corev1.ConfigMap:
			_, err = cs.CoreV1().ConfigMaps(namespace).Create(ctx, o, opts)
		case *corev1.Secret:
			_, err = cs.CoreV1().Secrets(namespace).Create(ctx, o, opts)
		default:
			return fmt.Errorf("document %d: kind %s is not one Apply creates", n, gvk.Kind)
		}
		if err != nil {
			return fmt.Errorf("document %d (%s): %w", n, gvk.Kind, err)
		}
	}
}

// ServiceAccountConfig is a client config acting as service account
// namespace/name, with a token from the TokenRequest API: a test then runs
// with the permissions RBAC gives that account, not an admin's.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		return nil, err
	}
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot get a token for service account %s/%s: %w", namespace, name, err)
	}
	cfg := c.AdminConfig()
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}
