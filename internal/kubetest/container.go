package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// launch is how one container runs as a local process: resolved once per
// pod, reused by every restart.
type launch struct {
	exe  string   // the local executable
	args []string // its arguments, after $(VAR) expansion and mount rewriting
	env  []string // NAME=value, in the kubelet's order
	dir  string   // the working directory
}

// startError is why a container cannot start, with the waiting reason
// the kubelet would report for it.
type startError struct {
	reason string // ErrImagePull, CreateContainerError, CreateContainerConfigError
	err    error
}

func (e *startError) Error() string { return e.err.Error() }

// imageExecutable is the executable images maps image to: as written,
// then without tag or digest, then by its last path element.
func imageExecutable(images map[string]string, image string) (string, bool) {
	if exe, ok := images[image]; ok {
		return exe, true
	}
	name := image
	if i := strings.LastIndex(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	if exe, ok := images[name]; ok {
		return exe, true
	}
	exe, ok := images[name[strings.LastIndex(name, "/")+1:]]
	return exe, ok
}

// containerArgs are the arguments exe runs with for c, by the rule in
// AgentOptions.Images: no command, the args; a command naming exe (same
// base name), the rest of it and the args; any other command, an error.
func containerArgs(exe string, c corev1.Container) ([]string, error) {
	if len(c.Command) == 0 {
		return slices.Clone(c.Args), nil
	}
	if filepath.Base(c.Command[0]) != filepath.Base(exe) {
		return nil, fmt.Errorf("container %s: command %q is not image %s's executable %s: the kubetest agent runs only AgentOptions.Images' executables (give no command, or one starting with %s)",
			c.Name, c.Command[0], c.Image, exe, filepath.Base(exe))
	}
	return append(slices.Clone(c.Command[1:]), c.Args...), nil
}

// expandVars replaces $(NAME) with vars[NAME] where NAME is defined and $$
// with $, leaving any other text as it is: Kubernetes' expansion of a
// container's command, args and env values.
func expandVars(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			if j := strings.IndexByte(s[i:], ')'); j > 0 {
				if v, ok := vars[s[i+2:i+j]]; ok {
					b.WriteString(v)
					i += j
					continue
				}
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// mount is a container's volume mount and the local directory (or file,
// with a subPath) standing in for it.
type mount struct{ path, local string }

// containerMounts are c's mounts of the pod's materialised volumes,
// longest path first so that a nested mount wins.
func containerMounts(c corev1.Container, volumes map[string]string) []mount {
	var ms []mount
	for _, vm := range c.VolumeMounts {
		local, ok := volumes[vm.Name]
		if !ok {
			continue
		}
		if vm.SubPath != "" {
			local = filepath.Join(local, vm.SubPath)
		}
		if p := filepath.Clean(vm.MountPath); p != "/" { // a mount over / would rewrite every path
			ms = append(ms, mount{path: p, local: local})
		}
	}
	slices.SortFunc(ms, func(x, y mount) int { return len(y.path) - len(x.path) })
	return ms
}

// rewritePath replaces every mount path in s with the local directory
// standing in for it, wherever the path appears whole: at the start of s
// or after a character no path name holds here (a space, a quote, '=',
// ':', ';', …), and followed by '/', the end of s or such a character. So
// "/etc/web/x.txt", "--config=/etc/web/x.txt" and the script
// `cat /etc/web/x.txt` all reach the materialised file, and "/etc/webby"
// or "/x/etc/web" do not. One pass, longest mount path first: a rewritten
// path is never rewritten again.
func rewritePath(s string, mounts []mount) string {
	if len(mounts) == 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		matched := false
		if i == 0 || !pathChar(s[i-1]) {
			for _, m := range mounts {
				end := i + len(m.path)
				if strings.HasPrefix(s[i:], m.path) && (end == len(s) || s[end] == '/' || !pathChar(s[end])) {
					b.WriteString(m.local)
					i, matched = end, true
					break
				}
			}
		}
		if !matched {
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// pathChar says whether c can be part of a path name in a manifest's
// command: letters, digits and ._-/+@~.
func pathChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._-/+@~", c) >= 0
}

// fieldValue is the downward-API field path of p, with ip as its address.
func fieldValue(p *corev1.Pod, path, ip string) (string, error) {
	key := func(prefix string) (string, bool) {
		rest, ok := strings.CutPrefix(path, prefix+"['")
		if !ok {
			return "", false
		}
		k, ok := strings.CutSuffix(rest, "']")
		return k, ok
	}
	if k, ok := key("metadata.annotations"); ok {
		return p.Annotations[k], nil
	}
	if k, ok := key("metadata.labels"); ok {
		return p.Labels[k], nil
	}
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return ip, nil
	case "status.hostIP", "status.hostIPs":
		return "127.0.0.1", nil
	}
	return "", fmt.Errorf("fieldRef %q is not one the kubetest agent knows (metadata.name, .namespace, .uid, .labels['k'], .annotations['k'], spec.nodeName, spec.serviceAccountName, status.podIP, status.hostIP)", path)
}

// containerEnv is c's environment as the kubelet builds it: base, then
// envFrom, then env, each value expanded against the variables before it
// (the downward API, ConfigMap and Secret keys resolved), paths into
// mounts rewritten. A missing object or key that is not optional is a
// CreateContainerConfigError, as in the kubelet; it is retried.
func containerEnv(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, c corev1.Container, ip string, base []string, mounts []mount) ([]string, error) {
	var names []string
	vars := map[string]string{}
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			names = append(names, k)
		}
		vars[k] = v
	}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	configErr := func(format string, args ...any) error {
		return &startError{reason: "CreateContainerConfigError", err: fmt.Errorf("container %s: "+format, append([]any{c.Name}, args...)...)}
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, configErr("envFrom configmap %q: %w", from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := cs.CoreV1().Secrets(p.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
					continue
				}
				return nil, configErr("envFrom secret %q: %w", from.SecretRef.Name, err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		v := expandVars(e.Value, vars)
		if f := e.ValueFrom; f != nil {
			var err error
			switch {
			case f.FieldRef != nil:
				v, err = fieldValue(p, f.FieldRef.FieldPath, ip)
				if err != nil {
					return nil, configErr("env %s: %w", e.Name, err)
				}
			case f.ConfigMapKeyRef != nil:
				r := f.ConfigMapKeyRef
				cm, err := cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
				val, ok := "", false
				if err == nil {
					val, ok = cm.Data[r.Key]
				}
				if !ok {
					if isTrue(r.Optional) {
						continue
					}
					return nil, configErr("env %s: key %q of configmap %q: %w", e.Name, r.Key, r.Name, orMissing(err))
				}
				v = val
			case f.SecretKeyRef != nil:
				r := f.SecretKeyRef
				s, err := cs.CoreV1().Secrets(p.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
				var val []byte
				ok := false
				if err == nil {
					val, ok = s.Data[r.Key]
				}
				if !ok {
					if isTrue(r.Optional) {
						continue
					}
					return nil, configErr("env %s: key %q of secret %q: %w", e.Name, r.Key, r.Name, orMissing(err))
				}
				v = string(val)
			default:
				return nil, configErr("env %s: only fieldRef, configMapKeyRef and secretKeyRef are supported by the kubetest agent", e.Name)
			}
		}
		set(e.Name, rewritePath(v, mounts))
	}
	out := make([]string, 0, len(names))
	for _, k := range names {
		out = append(out, k+"="+vars[k])
	}
	return out, nil
}

func isTrue(b *bool) bool { return b != nil && *b }

func orMissing(err error) error {
	if err != nil {
		return err
	}
	return errors.New("no such key")
}

// materialise makes p's volumes under dir and returns each volume's local
// directory: ConfigMap and Secret volumes as files (their items, or every
// key; read when the pod starts and not refreshed), emptyDir as an empty
// directory, hostPath as the host path itself, projected volumes (the
// service-account token the admission adds) as an empty directory: the
// agent gives pods no token. Any other kind is a CreateContainerConfigError
// naming it.
func materialise(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, dir string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range p.Spec.Volumes {
		local := filepath.Join(dir, "volumes", v.Name)
		var files map[string][]byte
		switch {
		case v.ConfigMap != nil:
			cm, err := cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && isTrue(v.ConfigMap.Optional)) {
				return nil, &startError{reason: "CreateContainerConfigError", err: fmt.Errorf("volume %s: configmap %q: %w", v.Name, v.ConfigMap.Name, err)}
			}
			files = map[string][]byte{}
			if cm != nil {
				for k, val := range cm.Data {
					files[k] = []byte(val)
				}
				for k, val := range cm.BinaryData {
					files[k] = val
				}
			}
			files = selectItems(files, v.ConfigMap.Items)
		case v.Secret != nil:
			s, err := cs.CoreV1().Secrets(p.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && isTrue(v.Secret.Optional)) {
				return nil, &startError{reason: "CreateContainerConfigError", err: fmt.Errorf("volume %s: secret %q: %w", v.Name, v.Secret.SecretName, err)}
			}
			files = map[string][]byte{}
			if s != nil {
				files = s.Data
			}
			files = selectItems(files, v.Secret.Items)
		case v.HostPath != nil:
			out[v.Name] = v.HostPath.Path
			continue
		case v.EmptyDir != nil, v.Projected != nil:
		default:
			return nil, &startError{reason: "CreateContainerConfigError", err: fmt.Errorf("volume %s: the kubetest agent materialises configMap, secret, emptyDir, hostPath and projected (left empty) volumes only", v.Name)}
		}
		if err := os.MkdirAll(local, 0o755); err != nil {
			return nil, err
		}
		for name, b := range files {
			path := filepath.Join(local, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				return nil, err
			}
		}
		out[v.Name] = local
	}
	return out, nil
}

// selectItems is files restricted to items (key → path) when there are any.
func selectItems(files map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	if len(items) == 0 {
		return files
	}
	out := map[string][]byte{}
	for _, it := range items {
		if b, ok := files[it.Key]; ok {
			out[it.Path] = b
		}
	}
	return out
}
