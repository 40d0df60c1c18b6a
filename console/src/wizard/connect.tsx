import type { ApiError } from '../api.js';
import { type Field, KINDS, type SourceKind, type Values } from './kinds.js';

/** The connection form of a kind: each field with the API's message for it beside it. */
export function ConnectionFields(props: {
  kind: SourceKind;
  values: Values;
  onChange: (values: Values) => void;
  error: ApiError | undefined;
}) {
  const { kind, values } = props;
  const set = (path: string, value: string | boolean) => props.onChange({ ...values, [path]: value });
  return (
    <div class="form-grid">
      {KINDS[kind].fields
        .filter((field) => !field.when || field.when(values))
        .map((field) => (
          <FieldInput
            key={field.path}
            field={field}
            value={values[field.path]}
            onChange={(value) => set(field.path, value)}
            problem={props.error?.forField(`source.${kind}.${field.path}`)}
          />
        ))}
    </div>
  );
}

function FieldInput(props: {
  field: Field;
  value: string | boolean | undefined;
  onChange: (value: string | boolean) => void;
  problem: string | undefined;
}) {
  const { field, value, problem } = props;
  const name = field.path;
  const id = `field-${name}`;
  const described = problem ? `${name}-problem` : undefined;
  const control =
    field.input === 'checkbox' ? (
      <input
        id={id}
        name={name}
        type="checkbox"
        checked={value === true}
        onChange={(e) => props.onChange(e.currentTarget.checked)}
      />
    ) : field.input === 'select' ? (
      <select
        id={id}
        name={name}
        value={String(value ?? '')}
        onChange={(e) => props.onChange(e.currentTarget.value)}
        aria-describedby={described}
      >
        {(field.options ?? []).map((option) => (
          <option key={option} value={option}>
            {option || '(none)'}
          </option>
        ))}
      </select>
    ) : field.input === 'textarea' ? (
      <textarea
        id={id}
        name={name}
        rows={3}
        value={String(value ?? '')}
        onInput={(e) => props.onChange(e.currentTarget.value)}
        aria-describedby={described}
      />
    ) : (
      <input
        id={id}
        name={name}
        type={field.input as 'text'}
        value={String(value ?? '')}
        placeholder={field.placeholder}
        autocomplete={field.input === 'password' ? 'new-password' : 'off'}
        onInput={(e) => props.onChange(e.currentTarget.value)}
        aria-invalid={problem ? true : undefined}
        aria-describedby={described}
      />
    );
  return (
    <div class={field.input === 'checkbox' ? 'field checkbox' : 'field'}>
      {field.input === 'checkbox' ? control : null}
      <label for={id}>{field.label}</label>
      {field.input === 'checkbox' ? null : control}
      {field.help && <span class="muted small">{field.help}</span>}
      {problem && (
        <span class="field-error" id={described}>
          {problem}
        </span>
      )}
    </div>
  );
}
