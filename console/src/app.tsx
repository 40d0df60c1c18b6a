import { useEffect, useState } from 'preact/hooks';
import { api, type Session, useCsrf, whenSignedOut } from './api.js';
import { paths, type Service } from './model.js';
import { AdminArea } from './pages/admin/admin.js';
import { AlertPage } from './pages/alert.js';
import { AlertsPage } from './pages/alerts.js';
import { DashboardPage } from './pages/dashboard.js';
import { DashboardsPage } from './pages/dashboards.js';
import { PipePage } from './pages/pipe.js';
import { PipesPage } from './pages/pipes.js';
import { QueryPage } from './pages/query.js';
import { SignIn } from './pages/sign-in.js';
import { WebhooksPage } from './pages/webhooks.js';
import { href, navigate, routeOf, useRoute } from './router.js';
import { Wizard } from './wizard/wizard.js';

type Known = { session: Session } | { session: null } | undefined;

export function App() {
  const [known, setKnown] = useState<Known>(undefined);
  const signedIn = (session: Session) => {
    useCsrf(session.csrfToken);
    setKnown({ session });
  };
  useEffect(() => {
    whenSignedOut(() => setKnown({ session: null }));
    api
      .get<Session | null>('/console/session')
      .then((session) => (session ? signedIn(session) : setKnown({ session: null })))
      .catch(() => setKnown({ session: null }));
  }, []);
  if (known === undefined) return <p class="muted loading">Loading…</p>;
  if (known.session === null) return <SignIn onSignedIn={signedIn} />;
  return <Console session={known.session} onSignedOut={() => setKnown({ session: null })} />;
}

function Console(props: { session: Session; onSignedOut: () => void }) {
  const { session } = props;
  const route = useRoute();
  const [services, setServices] = useState<Service[] | undefined>(undefined);
  const [servicesRead, setServicesRead] = useState(0);
  useEffect(() => {
    api.get<Service[]>(paths.services(session.key.organizationId)).then(setServices, () => setServices([]));
  }, [session.key.organizationId, servicesRead]);
  const [area, serviceId, page, pipeId] = route;
  const service = services?.find((s) => s.id === serviceId) ?? services?.[0];
  // The alerts area (`#/a/...`) belongs to the session's team, the admin area (`#/admin/...`) to
  // the organization: neither to a service.
  const alertsArea = area === 'a' && session.alerts !== null;
  const adminArea = area === 'admin';
  useEffect(() => {
    if (!service || !services) return;
    // The address as it is now: a hash changed just before the services arrived may not have
    // reached the route's state yet, and a deep link must not be sent back to the list.
    const [nowArea, nowService] = routeOf(location.hash);
    if (nowArea === 'admin' || (nowArea === 'a' && session.alerts !== null)) return;
    if (nowArea === 's' && services.some((s) => s.id === nowService)) return;
    navigate('s', service.id, 'pipes');
  }, [service, services, area, serviceId, session.alerts]);
  const inService = !alertsArea && !adminArea;

  const signOut = async () => {
    await api.delete('/console/session').catch(() => undefined);
    props.onSignedOut();
  };

  return (
    <div class="shell">
      <header>
        <strong class="brand">Sluice</strong>
        <span class="muted">{session.key.organizationName}</span>
        {services && services.length > 1 && (
          <select
            aria-label="Service"
            value={service?.id}
            onChange={(e) => navigate('s', e.currentTarget.value, page ?? 'pipes')}
          >
            {services.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        )}
        <nav>
          {service && (
            <>
              <a href={href('s', service.id, 'pipes')} class={inService && page === 'pipes' ? 'active' : ''}>
                Pipes
              </a>
              <a href={href('s', service.id, 'query')} class={inService && page === 'query' ? 'active' : ''}>
                Query
              </a>
              {session.alerts && <AlertsNav current={alertsArea ? route[1] : undefined} />}
            </>
          )}
          <a href={href('admin', 'organization')} class={adminArea ? 'active' : ''}>
            Admin
          </a>
        </nav>
        {!session.alerts && session.alertsUnavailable && (
          <span class="muted alerts-unavailable" title={session.alertsUnavailable}>
            Alerts unavailable: {session.alertsUnavailable}
          </span>
        )}
        <span class="who">
          {session.key.id} · <span class="role">{session.key.role}</span>
          {session.alerts ? ` · ${session.alerts.userName}@${session.alerts.teamName}` : ''}
        </span>
        <button type="button" class="link" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        {services?.length === 0 && !adminArea && (
          <p class="muted">
            This organization has no services yet: <a href={href('admin', 'services')}>create one</a>.
          </p>
        )}
        {adminArea && (
          <AdminArea
            session={session}
            route={route}
            onServicesChanged={() => setServicesRead((n) => n + 1)}
          />
        )}
        {alertsArea && services && <AlertsArea route={route} services={services} session={session} />}
        {inService && service && page === 'pipes' && !pipeId && (
          <PipesPage session={session} service={service} />
        )}
        {inService && service && page === 'pipes' && pipeId === 'new' && (
          <Wizard session={session} service={service} />
        )}
        {inService && service && page === 'pipes' && pipeId && pipeId !== 'new' && (
          <PipePage session={session} service={service} pipeId={pipeId} />
        )}
        {inService && service && page === 'query' && <QueryPage session={session} service={service} />}
      </main>
    </div>
  );
}

const ALERTS_PAGES = [
  ['dashboards', 'Dashboards'],
  ['alerts', 'Alerts'],
  ['webhooks', 'Webhooks'],
] as const;

function AlertsNav(props: { current: string | undefined }) {
  return (
    <>
      {ALERTS_PAGES.map(([page, label]) => (
        <a key={page} href={href('a', page)} class={props.current === page ? 'active' : ''}>
          {label}
        </a>
      ))}
    </>
  );
}

/** `#/a/dashboards[/<id>]`, `#/a/alerts[/<id>]`, `#/a/webhooks`: the team's alerts area. */
function AlertsArea(props: { route: string[]; services: Service[]; session: Session }) {
  const [, page, id] = props.route;
  if (page === 'dashboards' && id) return <DashboardPage dashboardId={id} />;
  if (page === 'dashboards') return <DashboardsPage services={props.services} />;
  if (page === 'alerts' && id) return <AlertPage alertId={id} session={props.session} />;
  if (page === 'alerts') return <AlertsPage />;
  if (page === 'webhooks') return <WebhooksPage />;
  return <p class="muted">No such page.</p>;
}
