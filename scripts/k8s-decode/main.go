// k8s-decode reads multi-document YAML manifests on stdin and decodes each one strictly into the
// Kubernetes API type its apiVersion and kind name: an unknown or misspelled field, a value of the
// wrong type or an unknown kind fails (exit 1, one line per problem). This is what the API server's
// strict field validation refuses, checked offline, with the same Go types. It prints one line per
// document decoded: "<apiVersion> <kind> <name or generateName>".
//
// Built by scripts/install-k8s-decode.sh into .tools/bin; used by test/deploy/strict-decode.test.ts.
package main

import (
	"fmt"
	"io"
	"os"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
	"tilehouse/tools/manifestdocs"
)

func target(typeMeta metav1.TypeMeta) (interface{ GetName() string; GetGenerateName() string }, error) {
	switch typeMeta.APIVersion + " " + typeMeta.Kind {
	case "batch/v1 Job":
		return &batchv1.Job{}, nil
	case "batch/v1 CronJob":
		return &batchv1.CronJob{}, nil
	case "v1 Namespace":
		return &corev1.Namespace{}, nil
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	}
	return nil, fmt.Errorf("unknown kind %q of apiVersion %q", typeMeta.Kind, typeMeta.APIVersion)
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading stdin:", err)
		os.Exit(1)
	}
	failed := false
	for index, doc := range manifestdocs.Split(input) {
		var typeMeta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &typeMeta); err != nil {
			fmt.Fprintf(os.Stderr, "document %d: %v\n", index+1, err)
			failed = true
			continue
		}
		object, err := target(typeMeta)
		if err != nil {
			fmt.Fprintf(os.Stderr, "document %d: %v\n", index+1, err)
			failed = true
			continue
		}
		if err := yaml.UnmarshalStrict(doc, object); err != nil {
			fmt.Fprintf(os.Stderr, "document %d (%s %s): %v\n", index+1, typeMeta.APIVersion, typeMeta.Kind, err)
			failed = true
			continue
		}
		name := object.GetName()
		if name == "" {
			name = object.GetGenerateName()
		}
		fmt.Printf("%s %s %s\n", typeMeta.APIVersion, typeMeta.Kind, name)
	}
	if failed {
		os.Exit(1)
	}
}
