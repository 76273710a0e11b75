// An OAuth 2 authorization server for the tests (oauth2-mock-server), on 127.0.0.1 and a
// free port. It publishes its metadata and key set, and its token endpoint issues signed JWTs
// (client credentials) whose claims the test chooses in the request's form fields: `resource`
// (the audience), `sub`, `aud`, `scope`, `client_id`, `iss` (to forge another issuer's),
// `exp_in` and `nbf_in` (seconds from now), `kid` (to name a key the server does not publish).
// The authorization code flow (with PKCE) signs in `johndoe`: the token's scope and audience
// are those the authorization request named, and the redirect carries the issuer (RFC 9207).
// With the field `opaque`, the token is an opaque string instead, known only to this server:
// its introspection endpoint (RFC 7662, HTTP Basic required) describes it until it is revoked
// at the revocation endpoint (RFC 7009) or expires.
// Prints its issuer URL on the first line of stdout.
const { HttpServer, OAuth2Issuer, OAuth2Service } = require('oauth2-mock-server');
const { randomBytes } = require('crypto');

// Opaque tokens: the token → the claims it was issued with.
const opaque = new Map();
// Authorization codes: the code → the scope and resource its authorization request named.
const granted = new Map();

function claimsOf(jwt) {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
}

function readForm(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
      if (body.length > 65536) reject(new Error('too large'));
    });
    req.on('end', () => resolve(new URLSearchParams(body)));
    req.on('error', reject);
  });
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

// RFC 7662 §2: the endpoint is protected (any Basic client is taken here); an unknown,
// expired or revoked token is `{"active": false}`.
async function introspect(req, res) {
  if (!/^Basic /.test(req.headers.authorization || '')) {
    return json(res, 401, { error: 'invalid_client' });
  }
  const form = await readForm(req);
  const claims = opaque.get(form.get('token'));
  const now = Math.floor(Date.now() / 1000);
  if (!claims || (claims.exp !== undefined && claims.exp <= now)) {
    return json(res, 200, { active: false });
  }
  return json(res, 200, { active: true, token_type: 'Bearer', ...claims });
}

async function revoke(req, res) {
  const form = await readForm(req);
  opaque.delete(form.get('token'));
  res.writeHead(200);
  res.end();
}

async function main() {
  const issuer = new OAuth2Issuer();
  await issuer.keys.generate('RS256');
  const service = new OAuth2Service(issuer);
  service.on('beforeAuthorizeRedirect', (redirect, req) => {
    const code = redirect.url.searchParams.get('code');
    if (code) granted.set(code, { scope: req.query.scope, resource: req.query.resource });
    redirect.url.searchParams.set('iss', issuer.url);
  });
  service.on('beforeTokenSigning', (token, req) => {
    const body = req.body || {};
    const now = Math.floor(Date.now() / 1000);
    const grant = body.grant_type === 'authorization_code' && granted.get(body.code);
    if (grant) {
      if (grant.scope !== undefined) token.payload.scope = grant.scope;
      if (grant.resource !== undefined) token.payload.aud = grant.resource;
    }
    // RFC 8707: a token asked for a resource is for that resource. A client that
    // authenticated with HTTP Basic is the token's subject unless the form names one.
    if (body.resource !== undefined) token.payload.aud = body.resource;
    const basic = (req.headers.authorization || '').match(/^Basic (.+)$/);
    if (basic) {
      const client = Buffer.from(basic[1], 'base64').toString().split(':')[0];
      token.payload.client_id = client;
      token.payload.sub = client;
    }
    for (const claim of ['sub', 'aud', 'client_id', 'iss']) {
      if (body[claim] !== undefined) token.payload[claim] = body[claim];
    }
    if (body.scope !== undefined) token.payload.scope = body.scope;
    if (body.exp_in !== undefined) token.payload.exp = now + Number(body.exp_in);
    if (body.nbf_in !== undefined) token.payload.nbf = now + Number(body.nbf_in);
    if (body.kid !== undefined) token.header.kid = body.kid;
  });
  service.on('beforeResponse', (response, req) => {
    const body = req.body || {};
    if (body.opaque === undefined || !response.body.access_token) return;
    const token = randomBytes(24).toString('base64url');
    opaque.set(token, claimsOf(response.body.access_token));
    response.body.access_token = token;
  });
  const server = new HttpServer((req, res) => {
    const path = (req.url || '').split('?')[0];
    const handled = req.method === 'POST' && { '/introspect': introspect, '/revoke': revoke }[path];
    if (handled) {
      handled(req, res).catch(() => json(res, 400, { error: 'invalid_request' }));
    } else {
      service.requestHandler(req, res);
    }
  });
  await server.start(0, '127.0.0.1');
  // The issuer by its address, never a name that could resolve elsewhere.
  issuer.url = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(`${issuer.url}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
