// An OAuth 2 authorization server for the tests (oauth2-mock-server), on 127.0.0.1 and a
// free port. It publishes its metadata and key set, and its token endpoint issues signed JWTs
// (client credentials) whose claims the test chooses in the request's form fields: `resource`
// (the audience), `sub`,
// `aud`, `scope`, `client_id`, `iss` (to forge another issuer's), `exp_in` and `nbf_in`
// (seconds from now), `kid` (to name a key the server does not publish).
// Prints its issuer URL on the first line of stdout.
const { OAuth2Server } = require('oauth2-mock-server');

async function main() {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  server.service.on('beforeTokenSigning', (token, req) => {
    const body = req.body || {};
    const now = Math.floor(Date.now() / 1000);
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
  await server.start(0, '127.0.0.1');
  // The issuer by its address, never a name that could resolve elsewhere.
  server.issuer.url = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(`${server.issuer.url}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
