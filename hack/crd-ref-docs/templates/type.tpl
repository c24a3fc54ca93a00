{{- define "type" -}}
{{- $type := . -}}
{{- if or (markdownShouldRenderType $type) (eq $type.Name "PackageManifest") -}}

### {{ $type.Name }}
{{ if $type.IsAlias }}
_Underlying type:_ {{ markdownRenderTypeLink $type.UnderlyingType }}
{{ end }}
{{ template "text" $type.Doc }}
{{ with index $type.Markers "kubebuilder:resource" }}{{ with index . 0 }}
_Scope:_ {{ if .Scope }}{{ .Scope }}{{ else }}Namespaced{{ end }}. _Short names:_ {{ range $i, $n := .ShortName }}{{ if $i }}, {{ end }}`{{ $n }}`{{ end }}. _Categories:_ {{ range $i, $c := .Categories }}{{ if $i }}, {{ end }}`{{ $c }}`{{ end }}.
{{ end }}{{ end }}
{{- if or $type.Validation (index $type.Markers "kubebuilder:validation:XValidation") }}
_Validation:_
{{- range $type.Validation }}
- {{ . }}
{{- end }}
{{- range index $type.Markers "kubebuilder:validation:XValidation" }}
- {{ template "text" .Message }}: `{{ .Rule }}`
{{- end }}
{{ end }}
{{- if $type.References }}
_Appears in:_ {{ range $i, $r := $type.SortedReferences }}{{ if $i }}, {{ end }}{{ markdownRenderTypeLink $r }}{{ end }}
{{ end }}
{{- if $type.Members }}
| Field | Type | Required | Default | Validation | Description |
| --- | --- | --- | --- | --- | --- |
{{- if $type.GVK }}
| <a id="{{ lower $type.Name }}-apiversion"></a>`apiVersion` | string | yes | | `{{ $type.GVK.Group }}/{{ $type.GVK.Version }}` | |
| <a id="{{ lower $type.Name }}-kind"></a>`kind` | string | yes | | `{{ $type.GVK.Kind }}` | |
{{- else if eq $type.Name "PackageManifest" }}
| <a id="packagemanifest-apiversion"></a>`apiVersion` | string | yes | | `convoy.dev/v1alpha1` or `manifests.package-operator.run/v1alpha1` | |
| <a id="packagemanifest-kind"></a>`kind` | string | yes | | `PackageManifest` | |
{{- end }}
{{- range $type.Members }}
| <a id="{{ lower $type.Name }}-{{ lower .Name }}"></a>`{{ .Name }}` | {{ markdownRenderType .Type }} | {{ template "required" . }} | {{ template "default" . }} | {{ template "validation" . }} | {{ template "type_members" . }} |
{{- end }}
{{ end }}
{{- if $type.EnumValues }}
| Value | Description |
| --- | --- |
{{- range $type.EnumValues }}
| `{{ .Name }}` | {{ template "cell" .Doc }} |
{{- end }}
{{ end }}
{{- end -}}
{{- end -}}
