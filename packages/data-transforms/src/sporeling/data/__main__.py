from sporeling.data.cli import main

raise SystemExit(main())
