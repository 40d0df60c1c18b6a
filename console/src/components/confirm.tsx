import type { ComponentChildren } from 'preact';

/** A question before an action that cannot be undone: the action's button, and Cancel. */
export function ConfirmDialog(props: {
  label: string;
  confirm: string;
  onConfirm: () => void;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  return (
    <div class="dialog" role="dialog" aria-modal="true" aria-label={props.label}>
      {props.children}
      <button type="button" class="danger" onClick={props.onConfirm}>
        {props.confirm}
      </button>
      <button type="button" onClick={props.onCancel}>
        Cancel
      </button>
    </div>
  );
}
