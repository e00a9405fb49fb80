// pod-security reads multi-document YAML manifests on stdin and judges every pod template in them
// (a Pod's spec, a Job's spec.template, a CronJob's spec.jobTemplate.spec.template) against the Pod
// Security Standard "restricted", at the latest version, with the Pod Security Admission library
// itself (k8s.io/pod-security-admission): the same evaluator a namespace labelled
// pod-security.kubernetes.io/enforce=restricted runs on admission. Documents of other kinds
// (Namespace, ConfigMap, ...) are skipped.
//
// It prints one line per pod template: "allowed <kind> <name>", or "refused <kind> <name>: <detail>"
// where the detail names the field (e.g. `allowPrivilegeEscalation != false (container
// "tilehouse" must set securityContext.allowPrivilegeEscalation=false)`). Exit 0 when every
// template is allowed and at least one was judged, 1 when one is refused or none was found (an
// empty input judged nothing, which must not pass as "all allowed"), 2 when the input is unreadable.
//
// Built by scripts/install-pod-security.sh into .tools/bin; used by test/deploy/pod-security.test.ts.
package main

import (
	"fmt"
	"io"
	"os"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
	"tilehouse/tools/manifestdocs"
)

type template struct {
	kind, name string
	meta       *metav1.ObjectMeta
	spec       *corev1.PodSpec
}

func nameOf(meta metav1.ObjectMeta) string {
	if meta.Name != "" {
		return meta.Name
	}
	return meta.GenerateName
}

// podTemplate finds the pod template of one document; ok is false for kinds that carry none.
func podTemplate(doc []byte) (found template, ok bool, err error) {
	var typeMeta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &typeMeta); err != nil {
		return template{}, false, err
	}
	switch typeMeta.APIVersion + " " + typeMeta.Kind {
	case "batch/v1 CronJob":
		var cronJob batchv1.CronJob
		if err := yaml.UnmarshalStrict(doc, &cronJob); err != nil {
			return template{}, false, err
		}
		pod := &cronJob.Spec.JobTemplate.Spec.Template
		return template{"CronJob", nameOf(cronJob.ObjectMeta), &pod.ObjectMeta, &pod.Spec}, true, nil
	case "batch/v1 Job":
		var job batchv1.Job
		if err := yaml.UnmarshalStrict(doc, &job); err != nil {
			return template{}, false, err
		}
		pod := &job.Spec.Template
		return template{"Job", nameOf(job.ObjectMeta), &pod.ObjectMeta, &pod.Spec}, true, nil
	case "v1 Pod":
		var pod corev1.Pod
		if err := yaml.UnmarshalStrict(doc, &pod); err != nil {
			return template{}, false, err
		}
		return template{"Pod", nameOf(pod.ObjectMeta), &pod.ObjectMeta, &pod.Spec}, true, nil
	}
	return template{}, false, nil
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading stdin:", err)
		os.Exit(2)
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the evaluator:", err)
		os.Exit(2)
	}
	restricted := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	judged, refused := 0, 0
	for index, doc := range manifestdocs.Split(input) {
		found, ok, err := podTemplate(doc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "document %d: %v\n", index+1, err)
			os.Exit(2)
		}
		if !ok {
			continue
		}
		judged++
		result := policy.AggregateCheckResults(evaluator.EvaluatePod(restricted, found.meta, found.spec))
		if result.Allowed {
			fmt.Printf("allowed %s %s\n", found.kind, found.name)
			continue
		}
		refused++
		// The detail repeats each reason, then names the field: `runAsNonRoot != true (pod must not
		// set securityContext.runAsNonRoot=false)`, several joined by "; ".
		fmt.Printf("refused %s %s: %s\n", found.kind, found.name, result.ForbiddenDetail())
	}
	if judged == 0 {
		fmt.Fprintln(os.Stderr, "no pod template found (expected CronJob, Job or Pod documents)")
		os.Exit(1)
	}
	if refused > 0 {
		os.Exit(1)
	}
}
