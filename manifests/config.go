package manifests

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	sigsjson "sigs.k8s.io/json"
)

// configPath is the root of config field paths in error messages.
var configPath = field.NewPath("config")

// schemaPath is where the config schema sits in manifest.yaml.
const schemaPath = "spec.config.openAPIV3Schema"

// configSchema is a compiled spec.config.openAPIV3Schema.
type configSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *schemacel.Validator
}

// compileSchema compiles a config schema; it must be a structural schema, as a CRD's.
func compileSchema(raw *runtime.RawExtension) (*configSchema, field.ErrorList) {
	fldPath := field.NewPath("spec", "config", "openAPIV3Schema")
	var v1 apiextensionsv1.JSONSchemaProps
	strict, err := sigsjson.UnmarshalStrict(raw.Raw, &v1)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(fldPath, "", err.Error())}
	}
	var errs field.ErrorList
	for _, e := range strict {
		errs = append(errs, field.Invalid(fldPath, "", e.Error()))
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return nil, append(errs, field.Invalid(fldPath, "", err.Error()))
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, append(errs, field.Invalid(fldPath, "", err.Error()))
	}
	errs = append(errs, structuralschema.ValidateStructural(fldPath, s)...)
	if len(errs) == 0 {
		errs = append(errs, checkRuleCosts(fldPath, s, true)...)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		errs = append(errs, field.Invalid(fldPath, "", err.Error()))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &configSchema{structural: s, validator: validator, cel: schemacel.NewValidator(s, false, celconfig.PerCallLimit)}, nil
}

// checkRuleCosts compiles the x-kubernetes-validations rules of s and of every schema below it,
// and refuses those that do not compile or whose estimated worst-case cost exceeds Kubernetes'
// limit for a CRD's rule (the runtime cost is bounded too: per call and per validation).
func checkRuleCosts(fldPath *field.Path, s *structuralschema.Structural, root bool) field.ErrorList {
	var errs field.ErrorList
	if len(s.XValidations) > 0 {
		results, err := schemacel.Compile(s, model.SchemaDeclType(s, root), celconfig.PerCallLimit,
			environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), schemacel.NewExpressionsEnvLoader())
		if err != nil {
			return append(errs, field.Invalid(fldPath.Child("x-kubernetes-validations"), "", err.Error()))
		}
		for i, r := range results {
			rulePath := fldPath.Child("x-kubernetes-validations").Index(i).Child("rule")
			switch {
			case r.Error != nil:
				errs = append(errs, field.Invalid(rulePath, s.XValidations[i].Rule, r.Error.Detail))
			case r.MaxCost > maxEstimatedRuleCost:
				errs = append(errs, field.Forbidden(rulePath, fmt.Sprintf(
					"rule is too expensive: its estimated worst-case cost %d exceeds the limit %d; bound the lists and strings it iterates with maxItems and maxLength",
					r.MaxCost, maxEstimatedRuleCost)))
			}
		}
	}
	for name, prop := range s.Properties {
		errs = append(errs, checkRuleCosts(fldPath.Child("properties").Key(name), &prop, false)...)
	}
	if s.Items != nil {
		errs = append(errs, checkRuleCosts(fldPath.Child("items"), s.Items, false)...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		errs = append(errs, checkRuleCosts(fldPath.Child("additionalProperties"), s.AdditionalProperties.Structural, false)...)
	}
	return errs
}

// maxEstimatedRuleCost is Kubernetes' limit on the estimated cost of one rule of a CRD schema.
const maxEstimatedRuleCost = 10_000_000

// apply defaults config in place and validates it: unknown fields (outside
// x-kubernetes-preserve-unknown-fields), OpenAPI value validation and x-kubernetes-validations
// rules. Paths in errors start at "config".
func (s *configSchema) apply(config map[string]any) field.ErrorList {
	var errs field.ErrorList
	unknown := pruning.PruneWithOptions(config, s.structural, false, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range unknown {
		errs = append(errs, field.NotSupported[string](configPath.Child(p), nil, nil))
	}
	defaulting.Default(config, s.structural)
	errs = append(errs, apiservervalidation.ValidateCustomResource(configPath, config, s.validator)...)
	if s.cel != nil {
		celErrs, _ := s.cel.Validate(context.Background(), configPath, s.structural, config, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// schemaLine returns the line in manifest.yaml of the schema of a config field path such as
// config.a[0].b, falling back to its closest declared ancestor.
func schemaLine(lines lineIndex, configField string) int {
	p := schemaPath
	rest := strings.TrimPrefix(configField, "config")
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "["):
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return lines.line(p)
			}
			p += ".items"
			rest = rest[end+1:]
		case strings.HasPrefix(rest, "."):
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			p += ".properties." + rest[:end]
			rest = rest[end:]
		default:
			return lines.line(p)
		}
	}
	return lines.line(p)
}

// configErrors records config violations against manifest.yaml at the schema's lines.
func configErrors(m *manifest, fieldErrs field.ErrorList, errs *errorList) {
	for _, fe := range fieldErrs {
		errs.add(m.file, schemaLine(m.lines, fe.Field), RuleConfig, "%s", fieldErrorText(fe))
	}
}

// fieldErrorText formats a field error without the noise of an empty value.
func fieldErrorText(fe *field.Error) string {
	if fe.Type == field.ErrorTypeNotSupported && fe.BadValue == nil {
		return fmt.Sprintf("%s: unknown field", fe.Field)
	}
	return fe.Error()
}
