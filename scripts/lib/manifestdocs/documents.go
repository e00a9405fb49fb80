// Package manifestdocs splits multi-document YAML manifests as kubectl reads them: the one reader
// of scripts/k8s-decode and scripts/pod-security (each its own module, pulling this one in by a
// `replace` directive to this directory).
package manifestdocs

import (
	"bufio"
	"bytes"
	"strings"
)

// Split cuts the input at "---" lines and drops the documents that hold only comments or blank lines.
func Split(input []byte) [][]byte {
	var docs [][]byte
	var current bytes.Buffer
	scanner := bufio.NewScanner(bytes.NewReader(input))
	scanner.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	flush := func() {
		for _, line := range strings.Split(current.String(), "\n") {
			trimmed := strings.TrimSpace(line)
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				docs = append(docs, append([]byte(nil), current.Bytes()...))
				break
			}
		}
		current.Reset()
	}
	for scanner.Scan() {
		line := scanner.Text()
		if strings.TrimRight(line, " ") == "---" {
			flush()
			continue
		}
		current.WriteString(line)
		current.WriteByte('\n')
	}
	flush()
	return docs
}
