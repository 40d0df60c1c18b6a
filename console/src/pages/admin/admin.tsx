import type { Session } from '../../api.js';
import { href } from '../../router.js';
import { KeysPage } from './keys.js';
import { OrganizationPage } from './organization.js';
import { ServicesPage } from './services.js';
import { TeamPage } from './team.js';
import { TeamsPage } from './teams.js';

const PAGES = [
  ['organization', 'Organization'],
  ['services', 'Services'],
  ['keys', 'API keys'],
  ['teams', 'Teams and tokens'],
] as const;

/**
 * `#/admin/organization`, `#/admin/services`, `#/admin/keys`, `#/admin/teams[/<id>]`: the
 * organization's identity (README, "Organizations and services", "API keys, teams and access
 * tokens"). Every role sees them; what the session's key may not do is not offered.
 */
export function AdminArea(props: { session: Session; route: string[]; onServicesChanged: () => void }) {
  const [, page = 'organization', id] = props.route;
  return (
    <section class="admin">
      <div class="title-row">
        <h1>Admin</h1>
        <nav class="subnav" aria-label="Admin pages">
          {PAGES.map(([name, label]) => (
            <a key={name} href={href('admin', name)} class={page === name ? 'active' : ''}>
              {label}
            </a>
          ))}
        </nav>
      </div>
      {page === 'organization' && <OrganizationPage session={props.session} />}
      {page === 'services' && <ServicesPage session={props.session} onChanged={props.onServicesChanged} />}
      {page === 'keys' && <KeysPage session={props.session} />}
      {page === 'teams' && !id && <TeamsPage session={props.session} />}
      {page === 'teams' && id && <TeamPage session={props.session} teamId={id} />}
      {!PAGES.some(([name]) => name === page) && <p class="muted">No such page.</p>}
    </section>
  );
}
