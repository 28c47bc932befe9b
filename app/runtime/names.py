"""People's and places' names for the view records, resolved in one batch per call.

Rules: a person is their last display name (the familiar its own display name, the window's owner
"You"); a DM is "DM with <name>"; a channel "<server> #<channel>"; the local chat "Local chat".
What was never seen falls back to a readable form of the id ("server 500 #501"), never to nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.memory.catalog import Catalog
from app.memory.records import OWNER_KEY, SELF_KEY
from app.runtime.api.views import PersonRef, PlaceRef

LOCAL_PLACE = "local"

_FIXED_PLACES = {
    "local": "Local chat",
    "familiar": "Everywhere (the familiar's own)",
    "quarantine": "Quarantined (never recalled)",
}


@dataclass(frozen=True, slots=True)
class NameTable:
    """Names for a batch of keys; any key not in it gets its fallback name."""

    people: dict[str, str]
    places: dict[str, str]
    familiar_name: str

    def person(self, key: str) -> PersonRef:
        if key == OWNER_KEY:
            return PersonRef(key, "You")
        if key == SELF_KEY:
            return PersonRef(key, self.people.get(key) or self.familiar_name)
        return PersonRef(key, self.people.get(key) or _fallback_person(key))

    def place(self, key: str) -> PlaceRef:
        if key in _FIXED_PLACES:
            return PlaceRef(key, _FIXED_PLACES[key])
        if key.startswith("dm:"):
            return PlaceRef(key, f"DM with {self.person('discord:' + key[3:]).name}")
        if key.startswith("guild:"):
            guild, _slash, channel = key.partition("/")
            server = self.places.get(guild) or f"server {guild[6:]}"
            if not channel:
                return PlaceRef(key, server)
            return PlaceRef(key, f"{server} #{self.places.get(key) or channel}")
        return PlaceRef(key, key)


def _fallback_person(key: str) -> str:
    platform, _colon, ident = key.partition(":")
    return f"user {ident}" if platform == "discord" and ident else key


def people_of_places(places: Iterable[str]) -> set[str]:
    """The people whose names a set of places needs (DMs are named after the other person)."""
    return {"discord:" + p[3:] for p in places if p.startswith("dm:")}


def place_keys(places: Iterable[str]) -> set[str]:
    """The stored names a set of places needs: each channel and its server."""
    out: set[str] = set()
    for place in places:
        if place.startswith("guild:"):
            out.add(place)
            out.add(place.split("/", 1)[0])
    return out


class Names:
    def __init__(self, catalog: Catalog, familiar_name: Callable[[], str]) -> None:
        """`familiar_name` gives the familiar's display name as the settings say now."""
        self._catalog = catalog
        self._familiar_name = familiar_name

    async def table(self, *, people: Iterable[str] = (), places: Iterable[str] = ()) -> NameTable:
        place_list = set(places)
        wanted_people = set(people) | people_of_places(place_list)
        wanted_people.discard(OWNER_KEY)
        return NameTable(
            people=await self._catalog.display_names(sorted(wanted_people)) if wanted_people else {},
            places=await self._catalog.place_names(sorted(place_keys(place_list))) if place_list else {},
            familiar_name=self._familiar_name(),
        )
