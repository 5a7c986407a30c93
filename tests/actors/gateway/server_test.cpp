// The server's lifecycle: start on a free port, serve, shut down.
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

TEST_CASE("gateway server: binds a free port, answers /health, shuts down", "[gateway]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  CHECK(s.port > 0);
  CHECK(get(s.port, "/health").status == 200);
  s.srv->request_shutdown();
  s.srv->wait();
}

