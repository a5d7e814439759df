from bandit_unlearning.cli import main

raise SystemExit(main())
