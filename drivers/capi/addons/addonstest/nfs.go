package addonstest

import "helm.sh/helm/v3/pkg/chart"

// GeneratedNFSChart is a small stand-in for kubernetes-csi's
// csi-driver-nfs chart, which the driver delivers with the Manila CSI
// plugin. The real chart cannot be rendered by a test: upstream publishes
// it only in its own repository (raw.githubusercontent.com), its Go module
// is not served by the module proxy the tests take the other charts from
// (go mod download answers 403), and no third-party chart is copied into
// this repository. The stand-in takes the real chart's value names
// (v4.11.0's values.yaml: kubeletDir, controller.replicas,
// storageClass.create, externalSnapshotter.enabled, image.baseRepo and
// image.<container>.repository/tag, a repository starting with "/" being
// under baseRepo) and renders the objects of the real one that those values
// shape: the CSIDriver, the controller Deployment, the node DaemonSet with
// the registration socket, the StorageClass and the snapshot controller
// when enabled. Its defaults are the opposite of the driver's values
// (kubelet in /var/lib/k0s/kubelet, two controllers, a StorageClass, a
// snapshot controller), so that a test sees the values the driver sets,
// not the chart's.
func GeneratedNFSChart(version string) *chart.Chart {
	values := `kubeletDir: /var/lib/k0s/kubelet
controller:
  replicas: 2
storageClass:
  create: true
externalSnapshotter:
  enabled: true
image:
  baseRepo: registry.k8s.io
  nfs:
    repository: registry.k8s.io/sig-storage/nfsplugin
    tag: v` + version + `
  csiProvisioner:
    repository: registry.k8s.io/sig-storage/csi-provisioner
    tag: v5.2.0
  livenessProbe:
    repository: registry.k8s.io/sig-storage/livenessprobe
    tag: v2.15.0
  nodeDriverRegistrar:
    repository: registry.k8s.io/sig-storage/csi-node-driver-registrar
    tag: v2.13.0
  externalSnapshotter:
    repository: registry.k8s.io/sig-storage/snapshot-controller
    tag: v8.2.0
`
	workload := func(kind, name, spec string) string {
		return "apiVersion: apps/v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\nspec:\n" + spec +
			"  selector: {matchLabels: {app: " + name + "}}\n  template:\n    metadata: {labels: {app: " + name + "}}\n    spec:\n"
	}
	file := func(name, data string) *chart.File { return &chart.File{Name: name, Data: []byte(data)} }
	return &chart.Chart{
		Raw:      []*chart.File{file("values.yaml", values)},
		Metadata: &chart.Metadata{APIVersion: "v1", Name: "csi-driver-nfs", Version: version, AppVersion: version},
		Templates: []*chart.File{
			file("templates/_helpers.tpl", `{{- define "nfs.image" -}}
{{- $c := index .Values.image .name -}}
{{- if hasPrefix "/" $c.repository }}{{ .Values.image.baseRepo }}{{ end }}{{ $c.repository }}:{{ $c.tag }}
{{- end -}}
`),
			file("templates/csi-nfs-driverinfo.yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: nfs.csi.k8s.io\nspec:\n  attachRequired: false\n"),
			file("templates/csi-nfs-controller.yaml", workload("Deployment", "csi-nfs-controller", "  replicas: {{ .Values.controller.replicas }}\n")+`      containers:
      - name: csi-provisioner
        image: {{ include "nfs.image" (dict "Values" .Values "name" "csiProvisioner") }}
      - name: nfs
        image: {{ include "nfs.image" (dict "Values" .Values "name" "nfs") }}
`),
			file("templates/csi-nfs-node.yaml", workload("DaemonSet", "csi-nfs-node", "")+`      containers:
      - name: liveness-probe
        image: {{ include "nfs.image" (dict "Values" .Values "name" "livenessProbe") }}
      - name: node-driver-registrar
        image: {{ include "nfs.image" (dict "Values" .Values "name" "nodeDriverRegistrar") }}
        env:
        - name: DRIVER_REG_SOCK_PATH
          value: {{ .Values.kubeletDir }}/plugins/csi-nfsplugin/csi.sock
      - name: nfs
        image: {{ include "nfs.image" (dict "Values" .Values "name" "nfs") }}
      volumes:
      - name: socket-dir
        hostPath: {path: {{ .Values.kubeletDir }}/plugins/csi-nfsplugin, type: DirectoryOrCreate}
`),
			file("templates/storageclass.yaml", `{{- if .Values.storageClass.create }}
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: nfs-csi
provisioner: nfs.csi.k8s.io
{{- end }}
`),
			file("templates/csi-snapshot-controller.yaml", `{{- if .Values.externalSnapshotter.enabled }}
`+workload("Deployment", "snapshot-controller", "")+`      containers:
      - name: snapshot-controller
        image: {{ include "nfs.image" (dict "Values" .Values "name" "externalSnapshotter") }}
{{- end }}
`),
		},
	}
}
