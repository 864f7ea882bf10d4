"""JavaScript-compatibility code, named for what it is: behaviour of the JS libraries the original ran on,
reproduced so that configs, patterns and texts mean here what they meant there.

- ``js``: string and number semantics (UTF-16 lengths and slices, ``parseInt``, ``trim``, ``\\s``);
- ``jsregex``: a translator from JavaScript ``RegExp`` to the ``regex`` module;
- ``glob`` (with ``_glob_*``): picomatch-compatible glob matching;
- ``js_yaml``, ``yaml_scalars``, ``yaml_scanner``: YAML loaded the way js-yaml 4 loads it;
- ``zod_types``: the strict leaf types of ``.kodiai.yml``, validated the way the original's zod schema is.
"""
