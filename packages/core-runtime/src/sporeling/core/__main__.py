from sporeling.core.cli import main

raise SystemExit(main())
