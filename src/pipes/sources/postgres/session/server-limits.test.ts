import { describe, expect, it } from 'vitest';
import { type ServerLimits, sessionsAllowed } from './server-limits.js';

// The arithmetic of the sessions a server lets a user open (PostgreSQL's InitPostgres checks); the
// role's limit is also checked against a real server in test/postgres-limits.test.ts.
const server: ServerLimits = {
  maxConnections: 100,
  superuserReserved: 3,
  reserved: 0,
  superuser: false,
  mayUseReserved: false,
  roleLimit: -1,
  databaseLimit: -1,
};

describe('sessionsAllowed', () => {
  it('a user has max_connections less the reserved connections', () => {
    expect(sessionsAllowed(server)).toMatchObject({ sessions: 97, field: 'host' });
    expect(sessionsAllowed({ ...server, reserved: 5 })).toMatchObject({ sessions: 92, field: 'host' });
    expect(sessionsAllowed({ ...server, reserved: 5 }).why).toContain('max_connections 100 less 8 reserved');
  });

  it('pg_use_reserved_connections opens reserved_connections, a superuser every connection', () => {
    expect(sessionsAllowed({ ...server, reserved: 5, mayUseReserved: true }).sessions).toBe(97);
    expect(sessionsAllowed({ ...server, reserved: 5, superuser: true }).sessions).toBe(100);
  });

  it("the role's and the database's CONNECTION LIMIT hold when lower, except for a superuser", () => {
    expect(sessionsAllowed({ ...server, roleLimit: 4 })).toMatchObject({ sessions: 4, field: 'credentials' });
    expect(sessionsAllowed({ ...server, roleLimit: 4, databaseLimit: 2 })).toMatchObject({
      sessions: 2,
      field: 'database',
    });
    expect(sessionsAllowed({ ...server, roleLimit: 200 })).toMatchObject({ sessions: 97, field: 'host' });
    expect(sessionsAllowed({ ...server, roleLimit: 0, databaseLimit: 1, superuser: true }).sessions).toBe(
      100,
    );
  });
});
