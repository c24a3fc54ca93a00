{{- define "type_members" -}}
{{- $field := . -}}
{{- if eq $field.Name "metadata" -}}
{{ with $field.Doc }}{{ template "cell" . }} {{ end }}See the Kubernetes API reference for the fields of `metadata`.
{{- else -}}
{{ template "cell" $field.Doc }}
{{- end -}}
{{- end -}}

{{- define "required" -}}
{{- if has "Required: {}" .Validation -}}yes{{- else if has "Optional: {}" .Validation -}}no{{- else if eq .Name "metadata" -}}yes{{- else -}}?{{- end -}}
{{- end -}}

{{- define "validation" -}}
{{- $first := true -}}
{{- range .Validation -}}
{{- if and (ne . "Required: {}") (ne . "Optional: {}") -}}
{{- if not $first }}<br />{{ end }}{{ $first = false }}{{ template "code" . }}
{{- end -}}
{{- end -}}
{{- range index .Markers "kubebuilder:validation:XValidation" -}}
{{- if not $first }}<br />{{ end }}{{ $first = false }}{{ template "cell" .Message }}: `{{ template "code" .Rule }}`
{{- end -}}
{{- end -}}

{{- /* text renders a doc comment as Markdown text: no raw HTML. */ -}}
{{- define "text" -}}
{{- . | replace "&" "&amp;" | replace "<" "&lt;" | replace ">" "&gt;" | replace "*" "\\*" -}}
{{- end -}}

{{- /* cell renders a doc comment in a table cell: one paragraph per line of the cell. */ -}}
{{- define "cell" -}}
{{- . | replace "&" "&amp;" | replace "<" "&lt;" | replace ">" "&gt;" | replace "*" "\\*" | replace "|" "\\|" | trim | replace "\n\n" "<br />" | replace "\n" " " -}}
{{- end -}}

{{- /* code renders text inside a code span of a table cell. */ -}}
{{- define "code" -}}
{{- . | replace "|" "\\|" -}}
{{- end -}}

{{- /* default renders a field's default as the API server applies it: JSON unless a string. */ -}}
{{- define "default" -}}
{{- with index .Markers "kubebuilder:default" -}}
{{- $v := (index . 0).Value -}}
`{{ if kindIs "string" $v }}{{ template "code" $v }}{{ else }}{{ toJson $v | replace "|" "\\|" }}{{ end }}`
{{- else -}}
{{- with .Default }}`{{ template "code" . }}`{{ end -}}
{{- end -}}
{{- end -}}
