package kubetest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestKubeImageExecutable(t *testing.T) {
	images := map[string]string{"busybox": "/bin/sh", "ghcr.io/soakd/soakd:v2": "/tmp/soakd-v2", "ghcr.io/soakd/soakd": "/tmp/soakd"}
	for image, want := range map[string]string{
		"busybox": "/bin/sh", "busybox:1.37": "/bin/sh", "docker.io/library/busybox@sha256:ab": "/bin/sh",
		"ghcr.io/soakd/soakd:v2": "/tmp/soakd-v2", "ghcr.io/soakd/soakd:v1": "/tmp/soakd", "localhost:5000/busybox": "/bin/sh",
		"nginx": "",
	} {
		got, ok := imageExecutable(images, image)
		if got != want || ok != (want != "") {
			t.Errorf("image %q: %q %t, want %q", image, got, ok, want)
		}
	}
}

func TestKubeContainerArgs(t *testing.T) {
	for _, tc := range []struct {
		command, args, want []string
		fails               bool
	}{
		{args: []string{"drive", "--shard", "0/3"}, want: []string{"drive", "--shard", "0/3"}},
		{command: []string{"/usr/local/bin/soakd", "drive"}, args: []string{"-v"}, want: []string{"drive", "-v"}},
		{command: []string{"soakd"}, want: []string{}},
		{command: []string{"/bin/cat", "/etc/passwd"}, fails: true},
	} {
		got, err := containerArgs("/tmp/build/soakd", corev1.Container{Name: "c", Image: "soakd", Command: tc.command, Args: tc.args})
		if (err != nil) != tc.fails || !tc.fails && !slices.Equal(got, tc.want) {
			t.Errorf("command %q args %q: %q %v, want %q (fails %t)", tc.command, tc.args, got, err, tc.want, tc.fails)
		}
	}
}

func TestKubeExpandVars(t *testing.T) {
	vars := map[string]string{"N": "3", "IDX": "1"}
	for in, want := range map[string]string{
		"--shard=$(IDX)/$(N)": "--shard=1/3", "$(UNSET) stays": "$(UNSET) stays", "$$(N) escaped": "$(N) escaped",
		"$N is the shell's": "$N is the shell's", "end $": "end $", "$(unclosed": "$(unclosed",
	} {
		if got := expandVars(in, vars); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKubeRewritePath(t *testing.T) {
	c := corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/soakd/"}, {Name: "deep", MountPath: "/etc/soakd/deep"}, {Name: "one", MountPath: "/one.yaml", SubPath: "x.yaml"},
		{Name: "root", MountPath: "/"}, {Name: "absent", MountPath: "/absent"},
	}}
	mounts := containerMounts(c, map[string]string{"cfg": "/tmp/v/cfg", "deep": "/tmp/v/deep", "one": "/tmp/v/one", "root": "/tmp/v/root"})
	for in, want := range map[string]string{
		"/etc/soakd":                         "/tmp/v/cfg",
		"/etc/soakd/config.yaml":             "/tmp/v/cfg/config.yaml",
		"--config=/etc/soakd/config.yaml":    "--config=/tmp/v/cfg/config.yaml",
		"/etc/soakd/deep/a":                  "/tmp/v/deep/a",
		"cat /etc/soakd/a; cat '/one.yaml'":  "cat /tmp/v/cfg/a; cat '/tmp/v/one/x.yaml'",
		"/etc/soakdx /x/etc/soakd etc/soakd": "/etc/soakdx /x/etc/soakd etc/soakd",
		"/absent/file":                       "/absent/file",
	} {
		if got := rewritePath(in, mounts); got != want {
			t.Errorf("rewritePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKubeFieldValue(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": "2"}}}
	for path, want := range map[string]string{
		"metadata.name": "p", "metadata.namespace": "ns", "metadata.uid": "u1", "metadata.labels['app']": "web",
		"metadata.annotations['batch.kubernetes.io/job-completion-index']": "2", "status.podIP": "127.0.0.7",
		"spec.nodeName": NodeName, "metadata.labels['none']": "",
	} {
		if got, err := fieldValue(p, path, "127.0.0.7"); got != want || err != nil {
			t.Errorf("fieldValue(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := fieldValue(p, "status.phase", "127.0.0.7"); err == nil || !regexp.MustCompile(`"status.phase".*status.podIP`).MatchString(err.Error()) {
		t.Errorf("an unknown field path: %v, want an error naming it and the known ones", err)
	}
}

// TestKubeContainerEnv: the kubelet's order and sources, against a fake
// clientset's ConfigMap and Secret, and a missing key as the waiting
// reason CreateContainerConfigError.
func TestKubeContainerEnv(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"B": "from-cm", "N": "3"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"token": []byte("t0k")}},
	)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{"idx": "1"}}}
	c := corev1.Container{Name: "c",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "CM_"}},
		Env: []corev1.EnvVar{
			{Name: "IDX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['idx']"}}},
			{Name: "SHARD", Value: "$(IDX)/$(CM_N)"},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "token"}}},
			{Name: "CONFIG", Value: "/etc/soakd/config.yaml"},
			{Name: "PATH", Value: "/pod/bin"},
		},
	}
	env, err := containerEnv(t.Context(), cs, p, c, "127.0.0.2", []string{"PATH=/usr/bin", "HOSTNAME=p"}, []mount{{path: "/etc/soakd", local: "/tmp/v"}})
	want := []string{"PATH=/pod/bin", "HOSTNAME=p", "CM_B=from-cm", "CM_N=3", "IDX=1", "SHARD=1/3", "TOKEN=t0k", "CONFIG=/tmp/v/config.yaml"}
	if err != nil || !slices.Equal(env, want) {
		t.Errorf("env %q %v, want %q", env, err, want)
	}
	c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "nope"}}}}
	_, err = containerEnv(t.Context(), cs, p, c, "127.0.0.2", nil, nil)
	se, ok := err.(*startError)
	if !ok || se.reason != "CreateContainerConfigError" || !regexp.MustCompile(`"nope".*"cm"`).MatchString(se.Error()) {
		t.Errorf("a missing key: %v, want CreateContainerConfigError naming the key and the configmap", err)
	}
}

func TestKubeMaterialise(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"a.yaml": "a: 1", "b": "2"}})
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "all", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		{Name: "some", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "a.yaml", Path: "conf/config.yaml"}}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}}}
	dir := t.TempDir()
	vols, err := materialise(t.Context(), cs, p, dir)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"all/a.yaml": "a: 1", "all/b": "2", "some/conf/config.yaml": "a: 1"} {
		if b, err := os.ReadFile(filepath.Join(dir, "volumes", path)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", path, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(vols["some"], "b")); !os.IsNotExist(err) {
		t.Errorf("an item list writes only its items: b is there (%v)", err)
	}
	if fi, err := os.Stat(vols["scratch"]); err != nil || !fi.IsDir() {
		t.Errorf("emptyDir: %v", err)
	}
	p.Spec.Volumes[0].ConfigMap.Name = "absent"
	if _, err := materialise(t.Context(), cs, p, t.TempDir()); err == nil {
		t.Error("a missing configmap: no error")
	}
}
