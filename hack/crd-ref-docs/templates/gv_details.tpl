{{- define "gvDetails" -}}
{{- $gv := . -}}
The custom resources of group `{{ $gv.Group }}`, version `{{ $gv.Version }}` (apiVersion
`{{ $gv.GroupVersionString }}`), and the `PackageManifest` file format read from Git.

Each field lists its type, whether it must be set, its default and its validation: the
OpenAPI constraints and the CEL rules the API server checks on admission. Every field has an
anchor `#<type>-<field>` in lower case, e.g. [`#gitsourcespec-url`](#gitsourcespec-url).

## Kinds
{{ range $gv.SortedKinds }}
- {{ $gv.TypeForKind . | markdownRenderTypeLink }}
{{- end }}

## File formats

- [PackageManifest](#packagemanifest): the `manifest.yaml` at the root of a package directory in Git.

## Types
{{ range $gv.SortedKinds }}
{{ template "type" ($gv.TypeForKind .) }}
{{- end }}
{{- range $gv.SortedTypes }}{{ if eq .Name "PackageManifest" }}
{{ template "type" . }}
{{- end }}{{ end }}
{{- range $gv.SortedTypes }}{{ if and (not .GVK) (ne .Name "PackageManifest") (markdownShouldRenderType .) }}
{{ template "type" . }}
{{- end }}{{ end }}
{{- end -}}
