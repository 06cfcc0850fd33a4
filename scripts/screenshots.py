"""Screenshots of every web page at desktop and phone width.

    python scripts/screenshots.py OUTDIR

Starts its own stack in a temporary folder (`clients.stack.LocalStack`: Redis, a
referee, two workers and `moonshot web`), six built-in bots as processes plus a slow
one, a small 3-player round robin, a 2v2 bracket with byes, single matches, a
test of a change (house bots) and an author with two versions of a bot, then
drives headless Chromium (Debian's /usr/bin/chromium, through Playwright: no browser
download) over every page and saves `<page>-desktop.png` (1280x800) and
`<page>-phone.png` (390x844) into OUTDIR, whole pages. Pages caught mid-play (a live
tournament, a live single match, a game whose board is still in play) are taken
while they are so.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clients.builtin import GreedyBot  # noqa: E402
from moon import Action, Observation  # noqa: E402

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # pragma: no cover - the script says so when it runs
    PlaywrightTimeout = TimeoutError  # type: ignore[misc, assignment]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


class SlowGreedy(GreedyBot):
    """GreedyBot that thinks a while, so games are caught in play (`scripts.screenshots:
    SlowGreedy`, run as its own bot process)."""

    name = "slow-greedy"
    DELAY_S = 0.25

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """The greedy move, late."""
        time.sleep(self.DELAY_S)
        return super().act(obs, legal)


def _wait(what: str, probe: Callable[[], Any], timeout: float = 120.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


class Shooter:
    """Saves each page at both sizes."""

    def __init__(self, browser: Any, base: str, out: Path) -> None:
        self.browser = browser
        self.base = base
        self.out = out
        self.pages = {}
        for size, viewport in SIZES.items():
            phone = size == "phone"
            ctx = browser.new_context(viewport=viewport, device_scale_factor=2 if phone else 1,
                                      is_mobile=phone, has_touch=phone)
            self.pages[size] = ctx.new_page()
        self.saved: list[Path] = []

    def shot(self, name: str, path: str | Callable[[], str], ready: str = "main",
             then: Callable[[Any], None] | None = None, tries: int = 1) -> None:
        """Open `path` at both sizes, wait for `ready`, run `then`, save full-page PNGs.

        A page caught in play may move on before it is drawn (a board released, a match
        over): with `tries`, `path` is asked again for each try and each size."""
        for size, page in self.pages.items():
            for attempt in range(tries):
                # Leave the last page first: one caught in play reloads itself when its game
                # turns public, which would abort this navigation.
                page.goto("about:blank")
                page.goto(self.base + (path() if callable(path) else path), wait_until="load")
                try:
                    page.wait_for_selector(ready, timeout=20_000 if tries == 1 else 3_000)
                    break
                except PlaywrightTimeout:
                    if attempt == tries - 1:
                        raise
            if then is not None:
                then(page)
            page.wait_for_timeout(400)  # charts and bracket lines are drawn after load
            file = self.out / f"{name}-{size}.png"
            page.screenshot(path=str(file), full_page=True)
            self.saved.append(file)
            print(f"  {file}", flush=True)


def _keys(*keys: str) -> Callable[[Any], None]:
    def press(page: Any) -> None:
        for k in keys:
            page.keyboard.press(k)
    return press


def main(argv: Sequence[str] | None = None) -> int:
    """Run everything; return the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", help="where to save the PNG files")
    ap.add_argument("--keep-data", action="store_true", help="keep the stack's data folder")
    args = ap.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    from clients.admin import Admin
    from clients.sdk import register
    from clients.stack import LocalStack
    from proto.moon.v1 import (
        account_pb2,
        account_pb2_grpc,
        bot_pb2,
        change_pb2,
        change_pb2_grpc,
        match_pb2,
    )

    data = Path(tempfile.mkdtemp(prefix="moonshot-shots-"))
    stack = LocalStack(data, listen="127.0.0.1:0", workers=2)
    try:
        print(f"starting a stack in {data} ...", flush=True)
        stack.start()
        web = stack.web_address
        print(f"referee {stack.address}, web pages on {web}", flush=True)
        admin = Admin(stack.address, stack.admin_token)
        kinds = [("greedy-1", "greedy"), ("greedy-2", "greedy"), ("greedy-3", "greedy"),
                 ("highest-1", "examples.highest_bot:HighestBot"),
                 ("highest-2", "examples.highest_bot:HighestBot"), ("random-1", "random"),
                 ("thinker", "scripts.screenshots:SlowGreedy")]
        ids: dict[str, str] = {}
        procs = []
        for name, spec in kinds:
            bot_id, token = register(stack.address, name)
            ids[name] = bot_id
            procs.append(stack.spawn(f"bot-{name}", ["bot", "run", "--bot", spec, "--server",
                                                     stack.address, "--token", token]))
        for p in procs:
            p.wait_for(r"connected to ", timeout=60)
        fast = [ids[n] for n, _ in kinds if n != "thinker"]

        # A game whose board is still in play: a round robin of six, one of them slow.
        slow_rr = admin.create_tournament(
            name="club night (in play)", players=3, format="round_robin",
            bot_ids=[*fast[:5], ids["thinker"]], seed=11, rules={"max_hands": "6"})
        rr = admin.create_tournament(
            name="spring round robin", players=3, format="round_robin", bot_ids=fast,
            seed=2026, rules={"max_hands": "12"}, seeding="given")
        single = admin.create_match(3, [ids["greedy-1"], ids["highest-1"], ids["random-1"]],
                                    seed=7)
        # An author with two versions of a bot (never run: offline), the first retired.
        accounts = account_pb2_grpc.AccountServiceStub(admin.channel)
        ada = accounts.SignUp(account_pb2.SignUpRequest(name="ada"), timeout=30)
        ada_1, _ = register(stack.address, "ada-1", ada.token)
        register(stack.address, "ada-2", ada.token, previous=ada_1)
        admin.bots.RetireBot(bot_pb2.RetireBotRequest(bot_id=ada_1),
                             metadata=(("authorization", f"Bearer {ada.token}"),), timeout=30)
        tests = change_pb2_grpc.TestServiceStub(admin.channel)
        change = tests.CreateTest(change_pb2.CreateTestRequest(spec=change_pb2.TestSpec(
            candidate="house:pimc?samples=16", baseline="house:greedy", elo0=0, elo1=150,
            max_games=200, rules={"max_hands": "3"})), metadata=admin.metadata, timeout=30).test

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=CHROMIUM_ARGS)
            shots = Shooter(browser, web, out)

            def embargoed() -> str | None:
                req = match_pb2.ListMatchesRequest(tournament_id=slow_rr.tournament_id)
                for m in admin.matches.ListMatches(req, timeout=30).matches:
                    pub = admin.get_match(m.match_id)
                    if pub.status == 3 and not pub.transcript_json:  # finished, not public
                        return str(m.match_id)
                return None

            def hidden() -> str:
                return f"/game/{_wait('a finished game of a board in play', embargoed, 90)}"

            print("pages caught in play:", flush=True)
            shots.shot("game-board-in-play", hidden, "#embargo", tries=10)
            shots.shot("tournament-live", f"/t/{slow_rr.tournament_id}", "#t-standings")
            live = admin.create_match(4, [ids["thinker"], ids["greedy-2"], ids["thinker"],
                                          ids["highest-2"]], seed=9, rules={"max_hands": "6"})
            _wait("the live match to be under way",
                  lambda: admin.get_match(live.match_id).actions_played > 12, 60)
            shots.shot("game-live", f"/game/{live.match_id}", "#viewer[data-source=live] .v-name")

            print("waiting for the round robin ...", flush=True)
            _wait("the round robin", lambda: admin.get_tournament(rr.tournament_id).status == 2,
                  240)
            ko = admin.create_tournament(
                name="2v2 cup", players=4, format="single_elimination", bot_ids=fast,
                seed=2027, options={"series_length": 1}, rules={"max_hands": "12"}, seeding="given",
                duplicate="replay")  # its note (replay trusts the bots) is on its page
            shots.shot("bracket-start", f"/t/{ko.tournament_id}", ".bracket .bm")
            _wait("the cup", lambda: admin.get_tournament(ko.tournament_id).status == 2, 240)
            _wait("the single match", lambda: admin.get_match(single.match_id).status == 3, 60)
            _wait("the live match", lambda: admin.get_match(live.match_id).status == 3, 120)
            _wait("the 3p fit", lambda: not admin.get_ratings("3p").provisional, 60)
            _wait("the 2v2 fit", lambda: not admin.get_ratings("2v2").provisional, 60)
            cup_game = admin.standings(ko.tournament_id).bracket.rounds[-1].matches[0].match_ids[0]
            _wait("the test of a change", lambda: tests.GetTest(change_pb2.GetTestRequest(
                test_id=change.test_id), timeout=30).test.status == 2, 240)

            print("finished pages:", flush=True)
            shots.shot("index", "/", "#tournaments")
            shots.shot("tournament", f"/t/{rr.tournament_id}", "#t-standings")
            shots.shot("bracket", f"/t/{ko.tournament_id}", ".bracket .bm")
            shots.shot("ratings-3p", "/ratings/3p", ".ratings-svg")
            shots.shot("ratings-2v2", "/ratings/2v2", ".ratings-svg")
            shots.shot("bots", "/bots", "table.bots")
            shots.shot("bot", f"/bot/{ids['greedy-1']}", "#results-chart")
            shots.shot("authors", "/authors", "table.authors")
            shots.shot("author", "/author/ada", "#author-bots")
            shots.shot("bot-version", "/bot/ada-2", "#bot-versions")
            shots.shot("games", "/games", "table.games")
            shots.shot("replay-deal", f"/game/{single.match_id}", ".v-seat .domino")
            shots.shot("replay-trick", f"/game/{single.match_id}#h2t3", ".v-trick")
            shots.shot("replay-score", f"/game/{single.match_id}#h1", ".v-seat",
                       _keys("End", "ArrowLeft"))
            shots.shot("replay-2v2", f"/game/{cup_game}#h1t4", ".v-trick")
            shots.shot("test", f"/test/{change.test_id}", "#llr-chart svg")
            shots.shot("test-board", f"/test/{change.test_id}/board/1", "iframe")
            shots.shot("not-found", "/game/no-such-game", ".error")
            browser.close()
        admin.close()
        print(f"{len(shots.saved)} screenshots in {out}", flush=True)
        return 0
    finally:
        stack.stop()
        if not args.keep_data:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
