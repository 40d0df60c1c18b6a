import type { ComponentChildren } from 'preact';
import type { ApiError } from '../api.js';

/**
 * A labelled form control with the server's message for its field beside it (ApiError.forField),
 * so a 400 that names `threshold` shows under the threshold.
 */
export function Field(props: {
  label: string;
  path: string;
  error: ApiError | undefined;
  children: ComponentChildren;
}) {
  const message = props.error?.forField(props.path);
  // The message sits outside the label, so the control's name stays its label alone.
  return (
    <div class="field">
      {/* biome-ignore lint/a11y/noLabelWithoutControl: the control is the child a caller passes in */}
      <label>
        {props.label}
        {props.children}
      </label>
      {message && (
        <span class="field-error" role="alert">
          {message}
        </span>
      )}
    </div>
  );
}

/** The form's error when no field of it is named (or none shown): at the top of the form. */
export function FormError(props: { error: ApiError | undefined; shownPaths: string[] }) {
  const error = props.error;
  if (!error) return null;
  const unshown = error.problems.length
    ? error.problems.filter(
        (p) => !p.path || !props.shownPaths.some((s) => p.path === s || p.path?.startsWith(`${s}.`)),
      )
    : [{ message: error.message }];
  if (unshown.length === 0) return null;
  return (
    <p class="error" role="alert">
      {unshown.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; ')}
    </p>
  );
}

/** A form's submit button (off while it is sent, or when `disabled`), and Cancel when it has one. */
export function FormActions(props: {
  submit: string;
  busy: boolean;
  disabled?: boolean;
  onCancel?: () => void;
}) {
  return (
    <div class="form-actions">
      <button type="submit" disabled={props.busy || props.disabled === true}>
        {props.submit}
      </button>
      {props.onCancel && (
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      )}
    </div>
  );
}
