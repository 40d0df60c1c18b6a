import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Session } from '../../api.js';
import { ConfirmDialog } from '../../components/confirm.js';
import { ErrorNote } from '../../components/table.js';

/** What a non-admin session is told instead of a form or a button it may not use. */
export function AdminNeeded(props: { session: Session; what: string }) {
  return (
    <p class="muted admin-needed">
      An admin key is needed to {props.what}; this session's key is {props.session.key.role}.
    </p>
  );
}

/**
 * A secret the server returns once (a key's secret, a token's value, a new organization's first
 * key): shown here until dismissed, never read again.
 */
export function ShownOnce(props: {
  label: string;
  value: string;
  onDone: () => void;
  children?: ComponentChildren;
}) {
  const [copied, setCopied] = useState<string | undefined>(undefined);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied('Copied.');
    } catch {
      setCopied('Select the value and copy it by hand.');
    }
  };
  return (
    <div class="card shown-once" role="status" aria-label={props.label}>
      <p>
        <strong>{props.label}</strong>: copy it now, it will not be shown again.
      </p>
      {props.children}
      <div class="secret-row">
        <input
          readOnly
          class="secret"
          aria-label={`${props.label} value`}
          value={props.value}
          onFocus={(e) => e.currentTarget.select()}
        />
        <button type="button" onClick={copy}>
          Copy
        </button>
        <button type="button" onClick={props.onDone}>
          Done
        </button>
      </div>
      {copied && <p class="muted small">{copied}</p>}
    </div>
  );
}

/** A revoke button that asks first, as deleting a pipe does. */
export function RevokeButton(props: {
  what: string;
  name: string;
  warning?: string;
  onRevoke: () => Promise<void>;
}) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const revoke = async () => {
    setError(undefined);
    try {
      await props.onRevoke();
    } catch (failure) {
      setError(failure as Error);
    } finally {
      setConfirming(false);
    }
  };
  return (
    <span>
      <button type="button" class="danger" onClick={() => setConfirming(true)}>
        Revoke
      </button>
      {confirming && (
        <ConfirmDialog
          label={`Revoke ${props.what}`}
          confirm={`Revoke ${props.what}`}
          onConfirm={revoke}
          onCancel={() => setConfirming(false)}
        >
          <p>
            Revoke {props.what} <strong>{props.name}</strong>? It stops working at once; this cannot be
            undone.
          </p>
          {props.warning && <p class="reason">{props.warning}</p>}
        </ConfirmDialog>
      )}
      <ErrorNote error={error} />
    </span>
  );
}
